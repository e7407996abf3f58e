cd /work/rr101/ff && . cases_sh/_env.sh
timeout 170 $PY scenarios/store_host.py --port 42539 --seconds 160 2>&1 | sed -u "s/^/store: /" &
sleep 8
( NODE_NAME=node-a timeout 150 $(mn 42539 j39 --node-rank 0 --nproc-per-node 1 --rdzv-conf is_host=0) $S --steps 400 --step-sleep 0.2 --use-logging 2>&1 | sed -u "s/^/0: /" ) & A=$!
( NODE_NAME=node-b timeout 150 $(mn 42539 j39 --node-rank 1 --nproc-per-node 1 --rdzv-conf is_host=0) $S --steps 400 --step-sleep 0.2 --use-logging 2>&1 | sed -u "s/^/1: /" ) & B=$!
for i in $(seq 120); do grep -q "step   25" $LOG && break; sleep 1; done
kill -KILL $(pgrep -f "^/work/rrvenv/bin/python scenarios/store_host.py --port 42539")   # the rendezvous store service dies
wait $A $B
