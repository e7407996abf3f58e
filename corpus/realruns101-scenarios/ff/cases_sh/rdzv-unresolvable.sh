cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42536 j36 --node-rank 0 --nproc-per-node 1 --rdzv-conf join_timeout=40) $S --steps 12 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $TR --nnodes 2 --rdzv-backend c10d --rdzv-endpoint node-a-ib0:42536 --rdzv-id j36 --max-restarts 0 --node-rank 1 --nproc-per-node 1 $S --steps 12 2>&1 | sed -u "s/^/1: /" ) &
wait
