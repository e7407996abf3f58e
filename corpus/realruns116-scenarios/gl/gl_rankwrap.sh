#!/bin/bash
# torchrun --no-python wrapper: apply a per-host resource limit to one rank only
# (simulates one node of the allocation having a lower ulimit than the others).
# LIMIT_RANK=<global rank> LIMIT_ARGS="-v 2500000" (any bash ulimit flags)
if [ -n "$LIMIT_RANK" ] && [ "$RANK" = "$LIMIT_RANK" ]; then
  ulimit $LIMIT_ARGS
fi
exec /work/rrvenv/bin/python "$@"
