cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 170 $(mn 42502 j2 --node-rank 0 --nproc-per-node 2 --tee 3) $S --steps 14 --batch-size 8 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 170 $(mn 42502 j2 --node-rank 1 --nproc-per-node 2 --tee 3) $S --steps 14 --batch-size 8 --fault viewbug --fault-local-rank 1 --fault-step 0 2>&1 | sed -u "s/^/1: /" ) &
wait
