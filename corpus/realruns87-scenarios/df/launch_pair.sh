#!/bin/bash
# Launch a 2-process jax.distributed job by hand (no torchrun), as a cluster script would.
# usage: launch_pair.sh KILL_AFTER_SECONDS -- args for jax_train.py
KILL_AFTER=$1; shift; shift
PY=/work/rr87/df/venv-extra/bin/python
export MASTER_ADDR=127.0.0.1 WORLD_SIZE=2
RANK=0 $PY -u /work/rr87/df/scenarios/jax_train.py "$@" &
P0=$!
RANK=1 $PY -u /work/rr87/df/scenarios/jax_train.py "$@" &
P1=$!
if [ "$KILL_AFTER" -gt 0 ]; then
  sleep "$KILL_AFTER"
  echo "launch_pair: sending SIGKILL to rank 1 (pid $P1)"
  kill -9 $P1
fi
wait $P0; echo "launch_pair: rank 0 exited with $?"
wait $P1; echo "launch_pair: rank 1 exited with $?"
