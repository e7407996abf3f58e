cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a TORCH_DISTRIBUTED_DEBUG=INFO timeout 150 $(mn 42510 j10 --node-rank 0 --nproc-per-node 1) $S --steps 12 --script-version v2 --fault-step 7 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b TORCH_DISTRIBUTED_DEBUG=INFO timeout 150 $(mn 42510 j10 --node-rank 1 --nproc-per-node 1) $S --steps 12 --script-version v1 --fault-step 7 2>&1 | sed -u "s/^/1: /" ) &
wait
