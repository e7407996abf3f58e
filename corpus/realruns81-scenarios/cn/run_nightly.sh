#!/bin/bash
# nightly driver (copied from the GPU cluster version)
set -euo pipefail
set -x
echo "nightly: $(date -u '+%F %T')"
cd /work/rr81/cn
NNODES=1
NPROC_PER_NODE=${GPUS_PER_NODE}
WORLD=$((NNODES * NPROC_PER_NODE))
echo "launching world size ${WORLD}"
OMP_NUM_THREADS=1 timeout 180 /work/rrvenv/bin/torchrun --nnodes ${NNODES} --nproc-per-node ${NPROC_PER_NODE} --master-port 36719 \
    scenarios/ddp_train.py "$@"
