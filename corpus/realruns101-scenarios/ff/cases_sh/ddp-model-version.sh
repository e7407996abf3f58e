cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42509 j9 --node-rank 0 --nproc-per-node 1) $S --steps 10 --script-version v2 --hidden 64 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42509 j9 --node-rank 1 --nproc-per-node 1) $S --steps 10 --script-version v2 --hidden 96 2>&1 | sed -u "s/^/1: /" ) &
wait
