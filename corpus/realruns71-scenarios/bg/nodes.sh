#!/bin/bash
# usage: nodes.sh LOGFILE "cmd for node0" "cmd for node1" [...]
# runs each agent command in the background, prefixing its merged output with "nodeK: " the way pdsh does
log=$1; shift
k=0
( for c in "$@"; do
    ( eval "$c" ) 2>&1 | sed -u "s/^/node$k: /" &
    k=$((k+1))
  done; wait ) > "$log" 2>&1
