cd /work/rr101/ff && . cases_sh/_env.sh
NODE_NAME=node-b timeout 150 $(mn 42535 j35 --node-rank 1 --nproc-per-node 1) $S --steps 60 > work/j35-node-b.out 2>&1 &
NODE_NAME=node-a timeout 150 $(mn 42535 j35 --node-rank 0 --nproc-per-node 1) $S --steps 60 | head -n 15
wait
