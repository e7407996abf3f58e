#!/bin/bash
# kill -9 the DataLoader worker of local rank $1 of the torchrun started under pid $2 after $3 seconds
# (what the kernel OOM killer does to a fat worker)
cd /work/rr143/jk
sleep $3
agent=$(pgrep -P $2 | head -1)
for try in $(seq 50); do
  for r in $(pgrep -P $agent); do
    if tr '\0' '\n' < /proc/$r/environ | grep -qx "LOCAL_RANK=$1"; then
      w=$(pgrep -P $r | head -1)
      if [ -n "$w" ]; then kill -9 $w; exit 0; fi
    fi
  done
  sleep 0.2
done
