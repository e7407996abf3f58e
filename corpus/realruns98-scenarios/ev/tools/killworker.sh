#!/bin/bash
# simulate an external kill (OOM killer / admin) of one DataLoader worker of a given rank
pidfile=$1; rank=$2; delay=$3
for i in $(seq 1 100); do [ -s "$pidfile" ] && break; sleep 0.2; done
sleep "$delay"
pid=$(awk -v r="$rank" '$1==r{print $2; exit}' "$pidfile")
kill -9 "$pid"
