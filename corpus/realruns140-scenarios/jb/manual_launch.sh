#!/bin/bash
# launch.sh-style manual multi-process launch without torchrun/mpirun: RANK/WORLD_SIZE/MASTER_* env per rank.
# usage: manual_launch.sh WORLD PORT -- script args...   (env PRE_RANK_<r> = command prefix for rank r)
WORLD=$1; PORT=$2; shift 3
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=$WORLD OMP_NUM_THREADS=1
pids=()
for r in $(seq 0 $((WORLD-1))); do
  pre_var=PRE_RANK_$r
  RANK=$r LOCAL_RANK=$r ${!pre_var} /work/rrvenv/bin/python "$@" &
  pids+=($!)
  echo "[launch.sh] started rank $r pid ${pids[$r]}"
done
rc=0
for r in $(seq 0 $((WORLD-1))); do
  wait ${pids[$r]}; s=$?
  echo "[launch.sh] rank $r (pid ${pids[$r]}) exited with status $s"
  [ $s -ne 0 ] && rc=$s
done
exit $rc
