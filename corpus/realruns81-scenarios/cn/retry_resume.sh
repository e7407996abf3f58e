#!/bin/bash
# resubmits the fine-tune step up to MAX_TRIES times (flaky shared storage workaround)
MAX_TRIES=${MAX_TRIES:-3}
CKPT=${CKPT:?CKPT must be set}
for attempt in $(seq 1 "$MAX_TRIES"); do
    echo "[retry] attempt ${attempt}/${MAX_TRIES}: resuming from ${CKPT}"
    OMP_NUM_THREADS=1 timeout 180 /work/rrvenv/bin/python scenarios/ckpt_train.py --steps 10 --resume "${CKPT}" "$@"
    rc=$?
    if [ $rc -eq 0 ]; then echo "[retry] attempt ${attempt} succeeded"; exit 0; fi
    echo "[retry] attempt ${attempt} failed with exit code ${rc}; sleeping 2s before retry"
    sleep 2
done
echo "[retry] giving up after ${MAX_TRIES} attempts"
exit 1
