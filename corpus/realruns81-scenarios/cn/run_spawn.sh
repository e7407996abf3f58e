#!/bin/bash
set -x
echo "[driver] $(date -u '+%F %T') host=$(hostname) job=${JOB:-local}"
export OMP_NUM_THREADS=1
timeout 180 /work/rrvenv/bin/python scenarios/spawn_train.py "$@"
status=$?
echo "[driver] python exited with status ${status}"
exit ${status}
