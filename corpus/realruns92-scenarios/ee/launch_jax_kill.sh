#!/bin/bash
# 3 JAX processes started by hand on one host; process 1 gets stuck reading its next shard and
# the operator kills it with SIGKILL (kill -9 <pid>) after 40 s.
cd /work/rr92/ee
for i in 0 1 2; do
  timeout 170 python scenarios/jax_dist.py --pid $i --nproc 3 --port 40063 --fault hang_rank --rank 1 --step 15 --steps 400 --hb 10 --shutdown-timeout 20 &
  tp[$i]=$!
done
sleep 40
victim=$(pgrep -P ${tp[1]})
echo "+ kill -9 $victim"
kill -9 $victim
wait
