cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=host-a timeout 150 $(mn 42503 j3 --node-rank 0 --nproc-per-node 1) $S --steps 12 --noisy 2>&1 | sed -u "s/^/host-a: /" ) &
sleep 1
( NODE_NAME=host-b timeout 150 $(mn 42503 j3 --node-rank 1 --nproc-per-node 1) $S --steps 12 --fault segv --fault-step 6 2>&1 | sed -u "s/^/host-b: /" ) &
wait
