#!/bin/bash
# run ray_jobs.py (fault kill_self), and SIGKILL the Ray Train worker of the given rank once it reported epoch 0
# usage: ray_kill_worker.sh RANK OUTFILE
cd /work/rr135/il
rank=$1; out=$2
timeout -k 10 170 /work/rrvenv/bin/python scenarios/ray_jobs.py --fault kill_self --fault-rank $rank --fault-epoch 1 --epochs 4 > "$out" 2>&1 &
main=$!
for i in $(seq 1 120); do
  pid=$(grep -a "worker rank $rank epoch 1\b\|worker rank $rank epoch 0" "$out" | grep -ao "RayTrainWorker pid=[0-9]*" | head -1 | cut -d= -f2)
  [ -n "$pid" ] && break; sleep 1
done
sleep 4
# verify it is a ray worker of this run (cwd is ours) before killing
if [ -n "$pid" ] && grep -q "ray::" /proc/$pid/cmdline 2>/dev/null; then kill -9 $pid; fi
wait $main
