#!/bin/bash
# prep with a Pool, then start ranks by hand. usage: pipeline.sh PORT NPROC "PREP ARGS" trainer args...
set -e
PORT=$1; N=$2; PREP=$3; shift 3
echo "=== $(date -u '+%F %T') data prep"
/work/rrvenv/bin/python /work/rr59/x/scenarios/prep_data.py $PREP
echo "=== $(date -u '+%F %T') training"
/work/rr59/x/scenarios/launch_bg.sh $PORT $N "$@"
echo "=== $(date -u '+%F %T') pipeline complete"
