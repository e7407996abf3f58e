cd /work/rr101/ff && . cases_sh/_env.sh
timeout 170 $PY scenarios/store_host.py --port 42537 --seconds 160 > work/store42537.out 2>&1 &
ST=$!
sleep 8
# run 1 (job "exp7") on both nodes
( NODE_NAME=node-a timeout 120 $(mn 42537 exp7 --node-rank 0 --nproc-per-node 1 --rdzv-conf is_host=0) $S --steps 8 2>&1 | sed -u "s/^/0: /" ) & A1=$!
( NODE_NAME=node-b timeout 120 $(mn 42537 exp7 --node-rank 1 --nproc-per-node 1 --rdzv-conf is_host=0) $S --steps 8 2>&1 | sed -u "s/^/1: /" ) & B1=$!
wait $A1 $B1
# run 2: same submit script re-run with a new config, rdzv-id not changed
( NODE_NAME=node-a timeout 120 $(mn 42537 exp7 --node-rank 0 --nproc-per-node 1 --rdzv-conf is_host=0) $S --steps 8 --hidden 128 2>&1 | sed -u "s/^/0: /" ) & A2=$!
( NODE_NAME=node-b timeout 120 $(mn 42537 exp7 --node-rank 1 --nproc-per-node 1 --rdzv-conf is_host=0) $S --steps 8 --hidden 128 2>&1 | sed -u "s/^/1: /" ) & B2=$!
wait $A2 $B2
kill $ST
