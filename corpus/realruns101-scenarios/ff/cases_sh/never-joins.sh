cd /work/rr101/ff && . cases_sh/_env.sh
NODE_NAME=node-a timeout 170 $(mn 42506 j6 --node-rank 0 --nproc-per-node 1 --rdzv-conf join_timeout=40) $S --steps 12 2>&1 | sed -u "s/^/0: /"
