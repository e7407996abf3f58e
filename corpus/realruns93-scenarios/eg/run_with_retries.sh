#!/usr/bin/env bash
# Job wrapper: retries the whole torchrun job up to MAX_ATTEMPTS times.
# usage: run_with_retries.sh [script args...]
#   env: MAX_ATTEMPTS NPROC PORT TORCHRUN_EXTRA RESUME_LATEST ULIMIT_N ULIMIT_F KILL_WATCH JOB_TIMEOUT CKPT_DIR
set -u
HERE="$(cd "$(dirname "$0")" && pwd)"
MAX_ATTEMPTS=${MAX_ATTEMPTS:-3}
NPROC=${NPROC:-2}
PORT=${PORT:-40210}
CKPT_DIR=${CKPT_DIR:-/work/rr93/eg/tmp/ckpt}
JOB_TIMEOUT=${JOB_TIMEOUT:-170}
TORCHRUN_EXTRA=${TORCHRUN_EXTRA:-}
# LAUNCHER: e.g. '/work/rrvenv/bin/python -m torch.distributed.run'
log() { echo "[run.sh $(date -u +%H:%M:%S)] $*"; }

log "job wrapper starting: host=$(hostname) user=$(id -un) nproc=$NPROC port=$PORT max_attempts=$MAX_ATTEMPTS"
log "python=$(/work/rrvenv/bin/python -V 2>&1) torch=$(/work/rrvenv/bin/python -c 'import torch;print(torch.__version__)')"
attempt=1
rc=0
while [ $attempt -le $MAX_ATTEMPTS ]; do
  export ATTEMPT=$attempt
  extra=()
  if [ "${RESUME_LATEST:-0}" = 1 ] && [ $attempt -gt 1 ]; then
    latest=$(ls -1 "$CKPT_DIR"/*.pt 2>/dev/null | sort | tail -n 1)
    if [ -n "$latest" ]; then log "resuming from latest checkpoint $latest"; extra=(--resume "$latest"); fi
  fi
  log "==================== attempt $attempt/$MAX_ATTEMPTS ===================="
  if [ -n "${KILL_WATCH:-}" ]; then
    rm -f "$KILL_WATCH"
    ( for i in $(seq 1 600); do [ -s "$KILL_WATCH" ] && break; sleep 0.2; done
      [ -s "$KILL_WATCH" ] && kill -9 "$(cat "$KILL_WATCH")" ) >/dev/null 2>&1 &
  fi
  (
    [ -n "${ULIMIT_N:-}" ] && ulimit -n "$ULIMIT_N"
    [ -n "${ULIMIT_F:-}" ] && ulimit -f "$ULIMIT_F"
    exec timeout "$JOB_TIMEOUT" ${LAUNCHER:-/work/rrvenv/bin/torchrun} --nproc-per-node "$NPROC" --master-port "$PORT" \
      --rdzv-conf timeout=30 $TORCHRUN_EXTRA "$HERE/layered_train.py" "$@" "${extra[@]}"
  )
  rc=$?
  if [ $rc -eq 0 ]; then
    log "attempt $attempt succeeded"
    break
  fi
  log "attempt $attempt failed with exit code $rc"
  log "cleanup: collecting leftovers"
  ls -l "$CKPT_DIR" 2>/dev/null | sed 's/^/[run.sh]   /'
  for f in /work/rr93/eg/tmp/*.pid; do [ -e "$f" ] && log "removing stale pidfile $f" && rm -f "$f"; done
  log "cleanup: removing /dev/shm/torch_* segments (if any)"
  ls /dev/shm 2>/dev/null | grep -c torch_ | sed 's/^/[run.sh]   torch shm segments: /'
  if [ $attempt -lt $MAX_ATTEMPTS ]; then
    log "retrying in 3s ..."
    sleep 3
  fi
  attempt=$((attempt+1))
done
if [ $rc -ne 0 ]; then log "giving up after $MAX_ATTEMPTS attempts (last exit code $rc)"; fi
exit $rc
