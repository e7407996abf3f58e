#!/bin/bash
# Job script: run the trainer, resubmitting up to 3 times from the last checkpoint when it dies.
cd /work/rr140/jc
for attempt in 1 2 3; do
  echo "=== $(date -u '+%F %T') attempt $attempt: python scenarios/ddp_noisy.py $* ==="
  /work/rrvenv/bin/python scenarios/ddp_noisy.py "$@" --resume
  rc=$?
  echo "=== attempt $attempt exited with status $rc ==="
  [ $rc -eq 0 ] && break
  sleep 2
done
exit $rc
