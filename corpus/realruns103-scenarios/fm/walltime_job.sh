#!/bin/bash
# Job script for the shared training box: enforces a wall-time limit and can deliver a
# signal to the launcher or to one rank after a delay (scheduler pre-emption notice, operator, etc.)
set -e
trap 'rc=$?; echo "[job $JOB_ID] command exited with status $rc" >&2' ERR
JOB_ID=${JOB_ID:-$$}
echo "[job $JOB_ID] start $(date -u +%FT%TZ) walltime=${WALLTIME:-none} signal=${SEND_SIG:-none}@${SEND_AFTER:-}s target=${SEND_TO:-launcher}"
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
if [ -n "$WALLTIME" ]; then
    timeout --signal=TERM "$WALLTIME" "$@"
    echo "[job $JOB_ID] finished $(date -u +%FT%TZ)"
    exit 0
fi
"$@" &
LPID=$!
if [ -n "$SEND_SIG" ]; then
    sleep "$SEND_AFTER"
    if [ "${SEND_TO:-launcher}" = launcher ]; then
        T=$LPID
    else
        n=${SEND_TO#rank}
        T=$(pgrep -P "$LPID" | sort -n | sed -n "$((n+1))p")
    fi
    echo "[job $JOB_ID] sending SIG$SEND_SIG to pid $T ($SEND_TO)"
    kill -s "$SEND_SIG" "$T"
fi
wait $LPID
echo "[job $JOB_ID] finished $(date -u +%FT%TZ)"
