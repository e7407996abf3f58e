#!/bin/bash
# usage: prlimit_rank.sh RUNDIR RANK STEP EXTRA_MB
# when rank RANK reaches STEP, cap its address space (prlimit --as) at its current VmSize + EXTRA_MB,
# as a node-level memory limit applied to a running process would.
RUNDIR=$1; RANK=$2; STEP=$3; EXTRA=$4
for i in $(seq 1 900); do
  s=$(cat "$RUNDIR/rank$RANK.step" 2>/dev/null || echo 0)
  if [ "${s:-0}" -ge "$STEP" ] 2>/dev/null; then
    pid=$(cat "$RUNDIR/rank$RANK.pid")
    [ "$(readlink /proc/$pid/cwd)" = "$(pwd)" ] || { echo "pid $pid not ours" >> "$RUNDIR/limiter.txt"; exit 1; }
    vm=$(awk '/VmSize/{print $2}' /proc/$pid/status)
    lim=$(( (vm + EXTRA*1024) * 1024 ))
    prlimit --pid "$pid" --as=$lim:$lim
    echo "$(date +%T) rank $RANK pid $pid VmSize ${vm}kB -> AS limit $lim" >> "$RUNDIR/limiter.txt"
    exit 0
  fi
  sleep 0.2
done
