#!/bin/bash
# usage: kill_during_save.sh PIDFILE FILE SIGNAL
# Sends SIGNAL to the trainer as soon as FILE has started to be written (a node going down /
# a job being killed in the middle of a checkpoint write).
PIDFILE=$1; FILE=$2; SIG=$3
for i in $(seq 1 6000); do
  if [ -s "$FILE" ]; then
    pid=$(cat "$PIDFILE"); [ "$(readlink /proc/$pid/cwd)" = "$(pwd)" ] || exit 1
    kill -s "$SIG" "$pid"; echo "$(date +%T) sent $SIG to $pid, $FILE is $(stat -c %s "$FILE") bytes" >> "$(dirname "$PIDFILE")/killer.txt"; exit 0
  fi
  sleep 0.02
done
