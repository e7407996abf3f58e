#!/bin/bash
# launch N JAX processes on this host (as a multi-host job would), output prefixed per process
N=${N:-2}
rm -f /work/rr125/hk/work/jaxshards/*.npz
for i in $(seq 0 $((N-1))); do
  ( timeout -k 5 150 /work/rrvenv/bin/python /work/rr125/hk/scenarios/jx.py --job dist --nprocs $N --proc-id $i 2>&1 | awk -v p=$i '{ print "[host" p "] " $0; fflush() }' ) &
done
wait
