#!/bin/bash
# Launch WORLD ranks as separate tasks (like `srun --ntasks=WORLD`), each task's output prefixed.
# usage: srun_like.sh WORLD PORT MODE [script args...]
#   MODE: label  -> "N: "            (srun --label)
#         host   -> "nodeNN: "       (pdsh)
#         ts     -> "YYYY-mm-dd HH:MM:SS N: " (awk timestamp + label)
#         hostrank -> "nodeNN: [rankN]: " (pdsh + rank prefix)
# RANKWRAP_<r>="cmd" is prepended to rank r's python command (e.g. prlimit ... or setpriv ...).
WORLD=$1; PORT=$2; MODE=$3; shift 3
for ((r=0; r<WORLD; r++)); do
  case $MODE in
    label) AWK="{print \"$r: \" \$0; fflush()}";;
    host) AWK="{printf \"gpu-node%02d: %s\n\", $r+1, \$0; fflush()}";;
    ts) AWK="{print strftime(\"%Y-%m-%d %H:%M:%S\") \" $r: \" \$0; fflush()}";;
    hostrank) AWK="{printf \"gpu-node%02d: [rank$r]: %s\n\", $r+1, \$0; fflush()}";;
    tshost) AWK="{printf \"%s gpu-node%02d: %s\n\", strftime(\"[%H:%M:%S]\"), $r+1, \$0; fflush()}";;
  esac
  wrapvar="RANKWRAP_$r"
  ( RANK=$r LOCAL_RANK=0 WORLD_SIZE=$WORLD MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT \
      ${!wrapvar} /work/rrvenv/bin/python -u scenarios/ddp_fault.py "$@"; exit $? ) 2>&1 | gawk "$AWK" &
done
wait
