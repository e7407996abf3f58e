#!/bin/bash
cd /work/rr129/hv
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
sp() { id=$1; port=$2; shift 2; : > $id.log
  for n in 0 1; do h=$([ $n = 0 ] && echo node-a || echo node-b)
    ( timeout 120 /work/rrvenv/bin/python scenarios/spawn_node.py $n $port -- "$@" 2>&1 | awk -v h="$h: " '{print h $0; fflush()}' >> $id.log ) &
  done; wait; }
sp r129hv-spawn-embidx-rank1 46188 --fault index --fault-rank 1 --pg-timeout 15
sp r129hv-spawn-hang-rank3 46189 --fault hang --fault-rank 3 --fault-step 2 --pg-timeout 12 --use-logging
mount -t tmpfs -o size=512k tmpfs /work/rr129/hv/mnt-full
BDELAY=2 scenarios/run2.sh r129hv-disk-full-rank3 46180 "" "" --fault disk-full --fault-rank 3 --fault-step 2 --ckpt-dir /work/rr129/hv/mnt-full --use-logging --pg-timeout 15
umount /work/rr129/hv/mnt-full
timeout 60 /work/rrvenv/bin/python scenarios/twonode.py --steps 6 > r129hv-plain-python-no-launcher.log 2>&1
wait
BDELAY=2 scenarios/run2.sh r129hv-node-b-launcher-sigterm2 46181 "" "" --fault none --steps 3000 --pg-timeout 15 &
for i in $(seq 90); do grep -q "rank 2\] step 60 " r129hv-node-b-launcher-sigterm2.log && break; sleep 0.5; done
kill -TERM $(pgrep -f "^/work/rrvenv/bin/python3? /work/rrvenv/bin/torchrun --nnodes 2 --node-rank 1 .*--master-port 46181 "); wait
echo B3DONE
