cd /work/rr101/ff && . cases_sh/_env.sh
( NODE_NAME=node-a timeout 170 $(mn 42513 j13 --node-rank 0 --nproc-per-node 1) $S --steps 400 --step-sleep 0.2 2>&1 | sed -u "s/^/0: /" ) &
sleep 1
NODE_NAME=node-b timeout 170 $(mn 42513 j13 --node-rank 1 --nproc-per-node 1) $S --steps 400 --step-sleep 0.2 > >(sed -u "s/^/1: /") 2>&1 &
for i in $(seq 120); do grep -q "step   30" $LOG && break; sleep 1; done
PB=$(pgrep -f "python3 /work/rrvenv/bin/torchrun.*j13.*node-rank 1")
kill -TERM $PB      # operator kills the node-b launcher (kill <pid> from another shell)
wait
