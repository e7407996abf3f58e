#!/bin/bash
# kill_rank.sh PIDDIR RANK DELAY SIGNAL [child]  -- wait for that rank's pid file, then signal it (or its first DataLoader worker child)
d=$1; r=$2; delay=$3; sig=$4; what=${5:-self}
for i in $(seq 1 120); do [ -s $d/rank$r.pid ] && break; sleep 0.5; done
sleep $delay
pid=$(cat $d/rank$r.pid)
if [ "$what" = child ]; then p0=$pid; for i in $(seq 1 50); do pid=$(pgrep -P $p0 | head -1); [ -n "$pid" ] && break; sleep 0.1; done; fi
echo "kill -$sig $pid" >&2
kill -$sig $pid
