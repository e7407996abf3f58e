#!/bin/bash
# driver used by the nightly job: sets up env, then launches torchrun
set -euxo pipefail
NPROC=${NPROC:-2}
PORT=${PORT:-36701}
RUN_NAME=${RUN_NAME:-nightly}
export OMP_NUM_THREADS=1
echo "=== [$(date -u +%H:%M:%S)] starting run ${RUN_NAME} with ${NPROC} procs on port ${PORT} ==="
/work/rrvenv/bin/python -c 'import torch; print("torch", torch.__version__)'
timeout 180 /work/rrvenv/bin/torchrun --nproc-per-node "${NPROC}" --master-port "${PORT}" \
    scenarios/ddp_train.py "$@"
echo "=== [$(date -u +%H:%M:%S)] run ${RUN_NAME} finished OK ==="
