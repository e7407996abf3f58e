#!/bin/bash
# usage: launch_jax.sh N PORT [--prefix] -- script args...
# starts N processes of the script with --pid i --nproc N --port PORT, waits for all.
N=$1; PORT=$2; shift 2
PREFIX=0
if [ "$1" = "--prefix" ]; then PREFIX=1; shift; fi
[ "$1" = "--" ] && shift
PY=/work/rrvenv/bin/python
pids=()
for ((i=0;i<N;i++)); do
  if [ $PREFIX = 1 ]; then
    $PY -u "$@" --pid $i --nproc $N --port $PORT 2>&1 | sed -u "s/^/[proc $i] /" &
  else
    $PY -u "$@" --pid $i --nproc $N --port $PORT &
  fi
  pids+=($!)
done
if [ -n "$KILL_PROC" ]; then
  # operator / OOM-killer stand-in: SIGKILL one process after KILL_AFTER seconds
  ( sleep ${KILL_AFTER:-15}; kill -9 ${pids[$KILL_PROC]} ) &
fi
trap 'echo "launcher: got signal, killing ${pids[*]}"; kill ${pids[*]} 2>/dev/null; sleep 3; kill -9 ${pids[*]} 2>/dev/null; exit 143' TERM INT
rc=0
for i in "${!pids[@]}"; do
  wait ${pids[$i]}; r=$?
  echo "launcher: process $i exited with code $r"
  [ $r != 0 ] && rc=$r
done
exit $rc
