#!/bin/bash
# emulate `srun --label -n $NT python train.py`: one task per rank, output labelled "N: "
NT=$1; PORT=$2; shift 2
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=$NT
for r in $(seq 0 $((NT-1))); do
  ( set -o pipefail; RANK=$r LOCAL_RANK=$r /work/rrvenv/bin/python -u "$@" 2>&1 | awk -v r=$r '{print r": "$0; fflush()}' ) &
done
fail=0; for j in $(jobs -p); do wait $j || fail=1; done
exit $fail
