#!/bin/bash
# poor man's launcher: one process per rank, env:// rendezvous on rank 0's TCPStore
NPROC=${NPROC:-2}
export MASTER_ADDR=127.0.0.1 MASTER_PORT=${MASTER_PORT:-47556} WORLD_SIZE=$NPROC
for r in $(seq 0 $((NPROC-1))); do
  RANK=$r LOCAL_RANK=$r /work/rrvenv/bin/python scenarios/ddp_faults.py "$@" &
done
wait
