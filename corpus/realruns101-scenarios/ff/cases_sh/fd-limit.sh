cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42517 j17 --node-rank 0 --nproc-per-node 1) $S --steps 40 --data-dir work/nodeA/data 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( ulimit -n 128; NODE_NAME=node-b timeout 150 $(mn 42517 j17 --node-rank 1 --nproc-per-node 1) $S --steps 40 --data-dir work/nodeA/data 2>&1 | sed -u "s/^/1: /" ) &
wait
