#!/bin/bash
# srun --label look-alike: start NTASKS copies of a command on this host, each with
# RANK/WORLD_SIZE/MASTER_* set, every output line prefixed "<rank>: " like srun -l.
# usage: srun_label.sh NTASKS PORT cmd args...
n=$1; port=$2; shift 2
export WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port
pids=()
for ((r=0; r<n; r++)); do
  ( set -o pipefail; RANK=$r LOCAL_RANK=$r stdbuf -oL -eL "$@" 2>&1 | sed -u "s/^/$r: /" ) &
  pids+=($!)
done
rc=0
for ((r=0; r<n; r++)); do
  wait ${pids[$r]} || { s=$?; echo "srun: error: $(hostname): task $r: Exited with exit code $s" >&2; rc=$s; }
done
exit $rc
