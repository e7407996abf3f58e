#!/bin/bash
# pdsh-style: one torchrun agent per "node" (both on this machine), each node's output prefixed with its host name.
# usage: two_nodes.sh PORT [script args...]
PORT=$1; shift
for n in 0 1; do
  ( /work/rrvenv/bin/torchrun --nnodes 2 --node-rank $n --nproc-per-node 1 --master-addr 127.0.0.1 --master-port $PORT scenarios/ddp_fault.py "$@" 2>&1 ) | gawk -v h=$(printf "trn-%03d" $((n+1))) '{print h ": " $0; fflush()}' &
done
wait
