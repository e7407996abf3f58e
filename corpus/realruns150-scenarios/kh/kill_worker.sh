#!/bin/bash
# after DELAY s, SIGKILL the DataLoader worker (child) of the rank whose env has RANK=$1 and MASTER_PORT=$2
R=$1; PORT=$2; DELAY=$3
sleep $DELAY
for p in $(pgrep -f "scenarios/ddp_fault.py"); do
  [ "$(readlink /proc/$p/cwd)" = /work/rr150/kh ] || continue
  tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RANK=$R" || continue
  tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "MASTER_PORT=$PORT" || continue
  for c in $(pgrep -P $p); do kill -9 $c; done
done
