#!/bin/bash
# launch 2 JAX processes; optionally SIGKILL process $KILL_PID after $KILL_AFTER seconds (simulates the OOM killer)
cd /work/rr100/fd
export JAX_PLATFORMS=cpu OMP_NUM_THREADS=1
python scenarios/jax_multi.py --process-id 0 & P0=$!
python scenarios/jax_multi.py --process-id 1 & P1=$!
if [ -n "$KILL_AFTER" ]; then sleep $KILL_AFTER; kill -9 $P1; fi
wait $P0; r0=$?; wait $P1; r1=$?
echo "process 0 exit code: $r0"; echo "process 1 exit code: $r1"
