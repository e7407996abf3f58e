#!/bin/bash
# shell-loop launcher: start N JAX processes, wait for all
N=$1; shift
pids=()
for i in $(seq 0 $((N-1))); do
  /work/rrvenv/bin/python /work/rr147/jx/scenarios/jax_dist.py --proc-id $i --nprocs $N "$@" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait $p || rc=$?; done
echo "launcher: all processes exited, last non-zero rc=$rc"
exit $rc
