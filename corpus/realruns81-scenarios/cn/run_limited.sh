#!/bin/bash
# shared-node driver: applies the site resource limits, then launches
set -x
ulimit -n ${FD_LIMIT:-1024}
ulimit -n
echo "[run_limited] launching $(date -u +%T)"
OMP_NUM_THREADS=1 timeout 180 /work/rrvenv/bin/torchrun --nproc-per-node ${NPROC:-2} --master-port ${PORT:-36721} scenarios/ddp_train.py "$@"
rc=$?
echo "[run_limited] torchrun exit code ${rc}"
exit $rc
