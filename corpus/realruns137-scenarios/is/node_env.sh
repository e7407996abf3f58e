#!/bin/bash
# per-node environment shim: local rank 1 emulates the second node's image (no build-essential on PATH)
if [ "$LOCAL_RANK" = "1" ]; then
  export PATH=/work/rrvenv/bin
fi
exec /work/rrvenv/bin/python "$@"
