#!/bin/bash
# usage: runcase.sh ID "node0 cmd" "node1 cmd" ...   (run from /work/rr71/bg)
id=$1; shift
q=""; for c in "$@"; do q="$q \"$c\""; done
echo "timeout 180 scenarios/nodes.sh $id.log$q" > meta/$id.cmd
timeout 180 scenarios/nodes.sh $id.log "$@"
echo "rc=$?" >> meta/$id.cmd
