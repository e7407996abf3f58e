#!/bin/bash
# start NTASKS ranks, each writing its own file OUTDIR/rank<r>.out (like a scheduler's
# per-task output files), then merge them for the job log with "$MERGE" (cat | tail).
# usage: per_rank_files.sh NTASKS PORT OUTDIR MERGE cmd args...
n=$1; port=$2; out=$3; merge=$4; shift 4
mkdir -p "$out"; rm -f "$out"/rank*.out
export WORLD_SIZE=$n MASTER_ADDR=127.0.0.1 MASTER_PORT=$port PYTHONUNBUFFERED=1
pids=()
for ((r=0; r<n; r++)); do
  RANK=$r LOCAL_RANK=$r "$@" > "$out/rank$r.out" 2>&1 &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait $p || rc=$?; done
if [ "$merge" = tail ]; then tail -n +1 -q "$out"/rank*.out; else cat "$out"/rank*.out; fi
exit $rc
