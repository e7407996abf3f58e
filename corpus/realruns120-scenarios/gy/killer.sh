#!/bin/bash
# killer.sh PIDDIR RANK STEP SIGNAL : send SIGNAL to that rank's worker once it has finished STEP
d=$1; r=$2; s=$3; sig=$4
for i in $(seq 1 600); do
  if [ -f "$d/rank$r.step" ] && [ "$(cat $d/rank$r.step)" -ge "$s" ] 2>/dev/null; then
    kill -s "$sig" "$(cat $d/rank$r.pid)"; exit 0
  fi
  sleep 0.1
done
