#!/bin/bash
# usage: run_nodes.sh OUTLOG "node0 cmd" ["node1 cmd" [delay_s]]
# starts each agent as an operator would in its own shell and merges output with [nodeN] prefixes
out=$1; shift
c0=$1; c1=$2; delay=${3:-0}
( bash -c "$c0" 2>&1 | sed -u 's/^/[node0] /' ) >> "$out" &
p0=$!
if [ -n "$c1" ]; then sleep "$delay"; ( bash -c "$c1" 2>&1 | sed -u 's/^/[node1] /' ) >> "$out" & p1=$!; fi
wait
