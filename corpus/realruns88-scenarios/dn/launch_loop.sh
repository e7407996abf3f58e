#!/bin/bash
# Start one python per rank by hand (no launcher). Usage:
#   NPROC=3 PORT=38410 [LIMIT_RANK=1 LIMIT="ulimit -v 1500000"] launch_loop.sh script.py args...
NPROC=${NPROC:-2}
export MASTER_ADDR=127.0.0.1 MASTER_PORT=${PORT:-38410} WORLD_SIZE=$NPROC
pids=()
for ((r=0; r<NPROC; r++)); do
  if [ -n "$LIMIT" ] && [ "$r" = "$LIMIT_RANK" ]; then
    ( eval "$LIMIT"; RANK=$r LOCAL_RANK=$r exec /work/rrvenv/bin/python "$@" ) &
  else
    RANK=$r LOCAL_RANK=$r /work/rrvenv/bin/python "$@" &
  fi
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait $p || rc=$?; done
echo "all ranks exited (last non-zero status $rc)"
exit $rc
