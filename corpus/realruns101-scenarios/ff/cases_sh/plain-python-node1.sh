cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 170 $(mn 42507 j7 --node-rank 0 --nproc-per-node 1 --rdzv-conf join_timeout=40) $S --steps 12 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b MASTER_ADDR=127.0.0.1 MASTER_PORT=42507 timeout 150 $PY $S --steps 12 2>&1 | sed -u "s/^/1: /" ) &
wait
