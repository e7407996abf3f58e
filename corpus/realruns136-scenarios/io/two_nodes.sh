#!/bin/bash
# Simulate a 2-node torchrun job on this host: node 0 and node 1 each run their own launcher.
# usage: two_nodes.sh "<node0 env>" "<node1 env>" "<node0 torchrun extra>" "<node1 torchrun extra>" script args...
E0=$1; E1=$2; X0=$3; X1=$4; shift 4
( env $E0 timeout 150 /work/rrvenv/bin/torchrun --nnodes 2 --node-rank 0 $X0 "$@" 2>&1 | awk '{print "[node0] " $0; fflush()}' ) &
sleep 1
( env $E1 timeout 150 /work/rrvenv/bin/torchrun --nnodes 2 --node-rank 1 $X1 "$@" 2>&1 | awk '{print "[node1] " $0; fflush()}' ) &
wait
