#!/bin/bash
# job wrapper: per-process limits as set by the site's batch prolog
ulimit -S -t "${CPU_SECONDS:-3600}"
export HF_HUB_OFFLINE=1
/work/rrvenv/bin/python scenarios/single_train.py "$@"
echo "job finished with status $?"
