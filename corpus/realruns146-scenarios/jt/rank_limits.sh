#!/bin/bash
# per-node launcher wrapper: applies this node's resource limits, then runs the trainer
# LIMIT_RANK selects which rank's node has the limit; LIMIT is a ulimit option string
if [ -n "$LIMIT_RANK" ] && [ "$RANK" = "$LIMIT_RANK" ]; then
  ulimit $LIMIT
fi
/work/rrvenv/bin/python /work/rr146/jt/scenarios/ddp_faults.py "$@"
