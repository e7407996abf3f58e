cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 120 $TR --nnodes 2 --node-rank 0 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:42500 --rdzv-id t1 --max-restarts 0 scenarios/mn_train.py --steps 6 2>&1 | sed -u 's/^/0: /' ) &
sleep 1
( NODE_NAME=node-b timeout 120 $TR --nnodes 2 --node-rank 1 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:42500 --rdzv-id t1 --max-restarts 0 scenarios/mn_train.py --steps 6 2>&1 | sed -u 's/^/1: /' ) &
wait
