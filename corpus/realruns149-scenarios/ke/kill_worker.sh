#!/bin/bash
# Simulate the node's OOM killer / an operator killing one DataLoader worker of rank $1 (workdir $2) after $3 s.
R=$1; WD=$2; sleep $3
for try in $(seq 30); do
for p in $(pgrep -f "shardtrain.py --workdir $WD "); do
  if [ "$(readlink /proc/$p/cwd)" = /work/rr149/ke ] && tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx "RANK=$R"; then
    par=$(ps -o ppid= -p $p | tr -d ' ')
    if ! tr '\0' '\n' < /proc/$par/environ 2>/dev/null | grep -q "^RANK=$R$" || ! ps -o args= -p $par | grep -q shardtrain; then
      w=$(pgrep -P $p | head -1); [ -n "$w" ] && kill -9 $w && exit 0
    fi
  fi
done
sleep 1
done
