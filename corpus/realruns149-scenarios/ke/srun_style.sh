#!/bin/bash
# Launch NPROC ranks by hand like srun; each rank's output prefixed by awk.
# usage: srun_style.sh STYLE NPROC PORT [RANK:WRAPPER ...] -- script args
# STYLE: label ("N: "), host ("nodeNN: "), stack (host, time, rank)
STYLE=$1; N=$2; PORT=$3; shift 3
declare -A WRAP
while [ "$1" != "--" ]; do WRAP[${1%%:*}]="${1#*:}"; shift; done; shift
pids=()
for ((r=0; r<N; r++)); do
  host=$(printf 'gpu-node%02d' $((r+1)))
  ( export RANK=$r LOCAL_RANK=0 WORLD_SIZE=$N MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT
    ${WRAP[$r]} /work/rrvenv/bin/python "$@" 2>&1 ) 2>&1 | \
  case $STYLE in
    label) awk -v r=$r '{print r": "$0; fflush()}' ;;
    host)  awk -v h=$host '{print h": "$0; fflush()}' ;;
    stack) awk -v h=$host -v r=$r '{print h": "strftime("%Y-%m-%dT%H:%M:%S")" "r": "$0; fflush()}' ;;
  esac &
  pids+=($!)
done
rc=0; for p in "${pids[@]}"; do wait $p || rc=$?; done
exit $rc
