#!/bin/bash
cd /work/rr129/hv
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
R=scenarios/run2.sh
# killed rank (SIGKILL from outside, like an admin or the OOM killer)
rm -f run/pid-*
$R r129hv-sigkill-rank2 46181 "" "" --fault kill --fault-rank 2 --fault-step 3 --pg-timeout 15 &
for i in $(seq 60); do [ -f run/pid-2 ] && break; sleep 1; done; sleep 1; kill -9 $(cat run/pid-2); wait
# node-b launcher stopped with SIGTERM mid-training
$R r129hv-node-b-launcher-sigterm 46182 "" "" --fault none --steps 400 --pg-timeout 15 &
for i in $(seq 90); do grep -q "rank 2\] step 5 " r129hv-node-b-launcher-sigterm.log && break; sleep 1; done
kill -TERM $(pgrep -f "^/work/rrvenv/bin/python /work/rrvenv/bin/torchrun --nnodes 2 --node-rank 1 .*--master-port 46182"); wait
# permission denied writing checkpoint on node-a rank 0 (root's DAC override dropped)
LAUNCH="setpriv --bounding-set -dac_override,-dac_read_search /work/rrvenv/bin/torchrun" $R r129hv-ckpt-readonly-rank0 46183 "--log-dir run/ld-perm --redirects 3 --tee 3" "" --fault ckpt-perm --fault-rank 0 --fault-step 2 --ckpt-dir /work/rr129/hv/ckpt-ro --pg-timeout 15
# disk full on node-b rank 3
mount -t tmpfs -o size=512k tmpfs /work/rr129/hv/mnt-full
$R r129hv-disk-full-rank3 46184 "" "" --fault disk-full --fault-rank 3 --fault-step 2 --ckpt-dir /work/rr129/hv/mnt-full --use-logging --pg-timeout 15
umount /work/rr129/hv/mnt-full
# healthy runs with alarming warnings
$R r129hv-healthy-sched-order 46185 "--tee 3" "--tee 3" --fault warn-sched --use-logging --steps 6
TORCH_DISTRIBUTED_DEBUG=INFO $R r129hv-healthy-debug-info 46186 "" "" --fault warn --steps 6
# node-b joins late: c10d rendezvous times out on node-a
: > r129hv-late-join-rdzv-timeout.log
( timeout 120 /work/rrvenv/bin/torchrun --nnodes 2 --node-rank 0 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:46187 --rdzv-id hv129 --rdzv-conf join_timeout=20 scenarios/twonode.py --steps 6 2>&1 | awk '{print "node-a: " $0; fflush()}' >> r129hv-late-join-rdzv-timeout.log ) &
sleep 35
( timeout 60 /work/rrvenv/bin/torchrun --nnodes 2 --node-rank 1 --nproc-per-node 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:46187 --rdzv-id hv129 --rdzv-conf join_timeout=20 scenarios/twonode.py --steps 6 2>&1 | awk '{print "node-b: " $0; fflush()}' >> r129hv-late-join-rdzv-timeout.log ) &
wait
echo BATCH2DONE
