#!/bin/bash
# wraps torchrun in a retry loop; used by the cron job
PORT=${PORT:-36715}
for i in 1 2 3; do
  echo "[$(date -u +%T)] try $i: torchrun on port ${PORT}"
  if OMP_NUM_THREADS=1 timeout 180 /work/rrvenv/bin/torchrun --nnodes 1 --nproc-per-node 2 --master-addr 127.0.0.1 --master-port "${PORT}" scenarios/ddp_train.py "$@"; then
     echo "[$(date -u +%T)] success"; exit 0
  fi
  echo "[$(date -u +%T)] try $i failed (rc=$?), retrying in 3s"; sleep 3
done
echo "[$(date -u +%T)] all retries failed"; exit 1
