#!/bin/bash
# per-rank wrapper used with `torchrun --no-python`: applies the site's per-rank memory cap, then starts python
if [ -n "$LIMIT_RANK" ] && [ "$RANK" = "$LIMIT_RANK" ]; then ulimit -v "$LIMIT_KB"; fi
exec /work/rrvenv/bin/python "$@"
