#!/bin/bash
# launch_local.sh N script.py [args...]: start N local processes with RANK/WORLD_SIZE set (no torchrun)
N=$1; shift
export WORLD_SIZE=$N MASTER_ADDR=127.0.0.1
pids=()
for ((r=0; r<N; r++)); do
  RANK=$r LOCAL_RANK=$r /work/rrvenv/bin/python "$@" &
  pids+=($!)
done
echo "launched ranks: ${pids[*]}"
rc=0
for p in "${pids[@]}"; do wait $p || rc=$?; done
echo "all ranks exited, last non-zero status $rc"
exit $rc
