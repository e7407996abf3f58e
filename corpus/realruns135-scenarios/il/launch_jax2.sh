#!/bin/bash
# launch two JAX processes on this host (one per "node"), merged output
# KILL_P1_AFTER=N : kill -9 process 1 after N seconds (simulates a lost node / OOM kill)
# P1_LOG=path     : write process 1's output to its own file (node-local log) instead of this terminal
cd /work/rr135/il
export JAX_CPU_COLLECTIVES_IMPLEMENTATION=gloo
/work/rrvenv/bin/python scenarios/jax_flax.py --proc-id 0 --nprocs 2 --coord 127.0.0.1:46481 "$@" &
p0=$!
if [ -n "$P1_LOG" ]; then
  /work/rrvenv/bin/python scenarios/jax_flax.py --proc-id 1 --nprocs 2 --coord 127.0.0.1:46481 "$@" > "$P1_LOG" 2>&1 &
else
  /work/rrvenv/bin/python scenarios/jax_flax.py --proc-id 1 --nprocs 2 --coord 127.0.0.1:46481 "$@" &
fi
p1=$!
if [ -n "$KILL_P1_AFTER" ]; then sleep "$KILL_P1_AFTER"; kill -9 $p1; fi
if [ -n "$P1_LOG" ]; then
  disown $p1; wait $p0; rc0=$?; echo "node0: process 0 exit code $rc0"
else
  wait $p0; rc0=$?; wait $p1; rc1=$?
  echo "launcher: process 0 exit code $rc0, process 1 exit code $rc1"
fi
