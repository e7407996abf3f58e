#!/bin/bash
# kill_worker.sh RANK SIG DELAY : after DELAY s, send SIG to a DataLoader worker of global rank RANK
# (stand-in for the host OOM killer / an operator's kill picking a loader process)
sleep "$3"
for try in $(seq 1 120); do
  for p in $(pgrep -f "python3 -u scenarios/loader_ddp.py"); do
    if tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RANK=$1"; then
      kid=$(pgrep -P "$p" | head -1)
      if [ -n "$kid" ]; then kill -"$2" $kid; echo "killed worker $kid of rank $1 pid $p with $2" >&2; exit 0; fi
    fi
  done
  sleep 0.5
done
echo "no worker found" >&2
