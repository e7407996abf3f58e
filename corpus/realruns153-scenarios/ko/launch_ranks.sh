#!/bin/bash
# Start one process per rank by hand (as a multi-host job script would), prefixing each line with host/rank.
# usage: launch_ranks.sh WORLD PORT -- script args...   (per-rank extra env: RANK<r>_ENV="K=V ...")
cd /work/rr153/ko
W=$1; PORT=$2; shift 3
for ((r=0; r<W; r++)); do
  extra_var="RANK${r}_ENV"; extra="${!extra_var}"
  wrap_var="RANK${r}_WRAP"; wrap="${!wrap_var}"
  delay_var="RANK${r}_DELAY"; delay="${!delay_var:-0}"
  ( sleep $delay; env RANK=$r LOCAL_RANK=$r WORLD_SIZE=$W MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT OMP_NUM_THREADS=1 $extra \
      timeout 150 $wrap /work/rrvenv/bin/python "$@" 2>&1; echo "exit status $?" ) \
    | awk -v h="trn-node$r" -v r=$r '{ print strftime("%H:%M:%S"), h, "rank" r ":", $0; fflush() }' &
done
wait
