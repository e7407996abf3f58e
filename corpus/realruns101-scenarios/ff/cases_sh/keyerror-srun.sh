cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42501 j1 --node-rank 0 --nproc-per-node 1) $S --steps 12 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b LR_SCHED=linear timeout 150 $(mn 42501 j1 --node-rank 1 --nproc-per-node 1) $S --steps 12 --fault keyerror --fault-step 5 2>&1 | sed -u "s/^/1: /" ) &
wait
