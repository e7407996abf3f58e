cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 170 $(mn 42504 j4 --node-rank 0 --nproc-per-node 1) $S --steps 12 --pg-timeout 25 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 110 $(mn 42504 j4 --node-rank 1 --nproc-per-node 1) $S --steps 12 --pg-timeout 25 --fault hang --fault-step 4 2>&1 | sed -u "s/^/1: /" ) &
wait
