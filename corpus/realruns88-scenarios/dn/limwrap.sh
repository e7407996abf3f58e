#!/bin/bash
# torchrun --no-python wrapper: apply a resource limit on one rank (LIMIT_RANK) before exec'ing python
if [ -n "$LIMIT" ] && [ "$RANK" = "$LIMIT_RANK" ]; then eval "$LIMIT"; fi
exec /work/rrvenv/bin/python "$@"
