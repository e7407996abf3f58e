#!/bin/bash
# two "nodes" (2 ranks each) started the way a job script does, each node's output prefixed with its hostname and time
PORT=$1; shift
for n in 0 1; do
  host=$([ $n = 0 ] && echo gpu-node07 || echo gpu-node12)
  ( set -o pipefail; /work/rrvenv/bin/torchrun --nnodes 2 --node-rank $n --nproc-per-node 2 --master-addr 127.0.0.1 --master-port $PORT --tee 3 "$@" 2>&1 \
      | awk -v h=$host '{ print h ": " strftime("%H:%M:%S") " " $0; fflush() }' ) &
done
fail=0; for j in $(jobs -p); do wait $j || fail=1; done
exit $fail
