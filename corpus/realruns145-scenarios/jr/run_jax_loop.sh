#!/bin/bash
# usage: run_jax_loop.sh NPROCS PORT args...
N=$1; PORT=$2; shift 2
cd /work/rr145/jr
for i in $(seq 0 $((N-1))); do
  /work/rrvenv/bin/python scenarios/jax_dist.py --proc $i --nprocs $N --coord 127.0.0.1:$PORT "$@" &
done
wait
echo "all processes exited"
