#!/bin/bash
# usage: kill_at_step.sh RUNDIR RANK STEP SIGNAL [DELAY_SECONDS]
# Waits until rank RANK has written step >= STEP to RUNDIR/rankRANK.step, then sends SIGNAL
# to the pid that rank published in RUNDIR/rankRANK.pid (an outside process stopping it).
# PIDFILE=... in the environment selects another pid (e.g. one of the rank's DataLoader workers).
RUNDIR=$1; RANK=$2; STEP=$3; SIG=$4; DELAY=${5:-0}
for i in $(seq 1 600); do
  s=$(cat "$RUNDIR/rank$RANK.step" 2>/dev/null || echo 0)
  if [ "${s:-0}" -ge "$STEP" ] 2>/dev/null; then
    sleep "$DELAY"; pid=$(cat "${PIDFILE:-$RUNDIR/rank$RANK.pid}")
    # make sure the pid is really our rank (cwd is our folder)
    if [ "$(readlink /proc/$pid/cwd)" = "$(pwd)" ]; then
      kill -s "$SIG" "$pid"; echo "$(date +%T) sent $SIG to rank $RANK pid $pid at step $s" >> "$RUNDIR/killer.txt"
    else
      echo "pid $pid not ours" >> "$RUNDIR/killer.txt"
    fi
    exit 0
  fi
  sleep 0.2
done
