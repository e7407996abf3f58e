#!/bin/bash
# start N jax processes from a shell loop; extra args go to jax_train.py
N=$1; PORT=$2; shift 2
for i in $(seq 0 $((N-1))); do
  JAX_COORD=127.0.0.1:$PORT JAX_NPROC=$N JAX_PID=$i timeout 150 /work/rrvenv/bin/python scenarios/jax_train.py "$@" &
done
wait
