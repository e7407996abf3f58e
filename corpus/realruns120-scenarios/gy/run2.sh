#!/bin/bash
# Simulate a 2-host launch (pdsh style): run each host's command, prefix its output with the host name,
# and merge everything into one file. Usage: run2.sh OUT "cmd for node01" "cmd for node02" [delay-before-node02]
# If OUT ends with '/', keep one unprefixed file per host instead (OUT/node01.log, OUT/node02.log).
out=$1; c1=$2; c2=$3; d=${4:-1}
if [[ "$out" == */ ]]; then
  mkdir -p "$out"
  ( timeout -k 5 180 bash -c "$c1" > "$out/node01.log" 2>&1 ) &
  p1=$!
  sleep "$d"
  ( timeout -k 5 180 bash -c "$c2" > "$out/node02.log" 2>&1 ) &
  p2=$!
else
  : > "$out"
  ( timeout -k 5 180 bash -c "$c1" 2>&1 | awk '{print "node01: " $0; fflush()}' >> "$out" ) &
  p1=$!
  sleep "$d"
  ( timeout -k 5 180 bash -c "$c2" 2>&1 | awk '{print "node02: " $0; fflush()}' >> "$out" ) &
  p2=$!
fi
wait $p1 $p2
