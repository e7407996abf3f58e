cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $PY -m torch.distributed.run --nnodes 2 --node-rank 0 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:42518 --rdzv-id j18 $S --steps 40 --data-dir work/nodeA/data --num-workers 1 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $PY -m torch.distributed.run --nnodes 2 --node-rank 1 --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:42518 --rdzv-id j18 $S --steps 40 --data-dir work/nodeB-corrupt/data --num-workers 1 2>&1 | sed -u "s/^/1: /" ) &
wait
