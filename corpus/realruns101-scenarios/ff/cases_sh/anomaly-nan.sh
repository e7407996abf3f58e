cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 150 $(mn 42520 j20 --node-rank 0 --nproc-per-node 1) $S --steps 12 --anomaly --use-logging 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
( NODE_NAME=node-b timeout 150 $(mn 42520 j20 --node-rank 1 --nproc-per-node 1) $S --steps 12 --anomaly --use-logging --fault lognan --fault-step 6 2>&1 | sed -u "s/^/1: /" ) &
wait
