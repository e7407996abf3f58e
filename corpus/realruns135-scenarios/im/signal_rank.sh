#!/bin/bash
# usage: signal_rank.sh LAUNCHER_PID LOCAL_RANK SIGNAL
# Sends SIGNAL to the worker process (a child of LAUNCHER_PID) whose environment has LOCAL_RANK=<LOCAL_RANK>.
lp=$1; lr=$2; sig=$3
for c in $(pgrep -P "$lp"); do
  if tr '\0' '\n' < /proc/$c/environ 2>/dev/null | grep -qx "LOCAL_RANK=$lr"; then
    echo "[signal_rank] kill -$sig $c (local rank $lr)" >&2
    kill -"$sig" "$c"; exit 0
  fi
done
echo "[signal_rank] no worker with LOCAL_RANK=$lr under $lp" >&2; exit 1
