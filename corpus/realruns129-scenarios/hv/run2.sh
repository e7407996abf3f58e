#!/bin/bash
# usage: run2.sh ID PORT "<launcher-extra-args for node-a>" "<for node-b>" SCRIPT_ARGS...
# launches two torchrun 'nodes' on this machine; each node's console is prefixed and both are appended to ID.log
cd /work/rr129/hv
id=$1; port=$2; exa=$3; exb=$4; shift 4
LAUNCH=${LAUNCH:-/work/rrvenv/bin/torchrun}
: > $id.log
for n in 0 1; do
  host=$([ $n = 0 ] && echo node-a || echo node-b)
  ex=$([ $n = 0 ] && echo "$exa" || echo "$exb")
  ( [ $n = 1 ] && sleep ${BDELAY:-0}
    timeout ${TMO:-120} $LAUNCH --nnodes 2 --node-rank $n --nproc-per-node 2 --master-addr 127.0.0.1 --master-port $port $ex scenarios/twonode.py "$@" 2>&1 \
    | awk -v h="$host: " '{print h $0; fflush()}' >> $id.log ) &
  echo $! > run/node$n.pid
done
wait
