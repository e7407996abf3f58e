#!/bin/bash
# Retry wrapper: re-launches training from the newest checkpoint when an attempt dies.
# usage: restart_wrapper.sh <attempt-1 time budget in s> <total steps>
PY=/work/rrvenv/bin/python; SCRIPT=$(dirname $0)/single.py
for attempt in 1 2 3; do
  latest=$(ls -1 ck/ckpt_*.pt 2>/dev/null | sort -t_ -k2 -n | tail -1)
  echo "[wrapper] $(date -u +%H:%M:%S) attempt $attempt, resume='${latest}'"
  if [ $attempt = 1 ]; then budget=$1; else budget=120; fi
  timeout -s KILL $budget $PY $SCRIPT --steps $2 --slow 0.002 --out ck ${latest:+--resume $latest --trust-ckpt}
  rc=$?
  echo "[wrapper] $(date -u +%H:%M:%S) attempt $attempt exited with status $rc"
  [ $rc = 0 ] && exit 0
  sleep 1
done
exit 1
