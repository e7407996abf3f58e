#!/bin/bash
# start ranks by hand in background; RANK/WORLD_SIZE by hand; usage: launch_bg.sh PORT NPROC [LAUNCH_WORLD] -- trainer args
set -e
PORT=$1; N=$2; shift 2
WS=${WORLD_SIZE_OVERRIDE:-$N}
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=$WS
PY=/work/rrvenv/bin/python
echo "launching $N ranks (WORLD_SIZE=$WS) on $MASTER_ADDR:$MASTER_PORT at $(date -u +%H:%M:%S)"
pids=()
for r in $(seq 0 $((N-1))); do
  if [ -n "$ULIMIT_RANK" ] && [ "$r" = "$ULIMIT_RANK" ]; then
    echo "rank $r: ulimit $ULIMIT"
    ( ulimit $ULIMIT; RANK=$r exec $PY /work/rr59/x/scenarios/handrank_train.py "$@" ) &
  else
    RANK=$r $PY /work/rr59/x/scenarios/handrank_train.py "$@" &
  fi
  pids+=($!)
done
for p in "${pids[@]}"; do wait $p; done
echo "all ranks finished"
