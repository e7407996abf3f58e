#!/bin/bash
# Sends SIGKILL to the worker whose RANK env equals $1 after $2 seconds
# (stands in for an external killer: OOM reaper, admin, node agent).
target=$1; delay=$2; pattern=$3
sleep "$delay"
for pid in $(pgrep -f "$pattern"); do
  if tr '\0' '\n' < /proc/$pid/environ 2>/dev/null | grep -qx "RANK=$target"; then
    kill -9 "$pid"; exit 0
  fi
done
