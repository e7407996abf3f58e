cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 170 $(mn 42508 j8 --node-rank 0 --nproc-per-node 2) $S --model tp --hidden 64 --steps 10 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 170 $(mn 42508 j8 --node-rank 1 --nproc-per-node 1) $S --model tp --hidden 64 --steps 10 2>&1 | sed -u "s/^/1: /" ) &
wait
