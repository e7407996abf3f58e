#!/bin/bash
# Launch ranks by hand with env vars (like a job script without torchrun). usage: manual_launch.sh PORT DELAY0 script args...
PORT=$1; DELAY0=$2; shift 2
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=2
( RANK=1 LOCAL_RANK=1 timeout 150 /work/rrvenv/bin/python "$@" 2>&1 | awk '{print "host-b: " $0; fflush()}' ) &
sleep $DELAY0
( RANK=0 LOCAL_RANK=0 timeout 150 /work/rrvenv/bin/python "$@" 2>&1 | awk '{print "host-a: " $0; fflush()}' ) &
wait
