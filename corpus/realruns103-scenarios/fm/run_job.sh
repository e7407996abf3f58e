#!/bin/bash
# Batch-style job wrapper: applies resource limits, runs the training command, reports.
set -e
JOB_NAME=${JOB_NAME:-train}
echo "[$(date -u +%H:%M:%S)] job $JOB_NAME starting on $(hostname) (pid $$)"
[ -n "$LIMIT_FSIZE" ] && { ulimit -f "$LIMIT_FSIZE"; echo "[job] ulimit -f $LIMIT_FSIZE"; }
[ -n "$LIMIT_NOFILE" ] && { ulimit -n "$LIMIT_NOFILE"; echo "[job] ulimit -n $LIMIT_NOFILE"; }
[ -n "$LIMIT_VMEM" ] && { ulimit -v "$LIMIT_VMEM"; echo "[job] ulimit -v $LIMIT_VMEM"; }
[ -n "$LIMIT_NPROC" ] && { ulimit -u "$LIMIT_NPROC"; echo "[job] ulimit -u $LIMIT_NPROC"; }
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
echo "[job] cmd: $*"
"$@"
echo "[$(date -u +%H:%M:%S)] job $JOB_NAME finished OK"
