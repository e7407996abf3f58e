#!/bin/bash
# usage: run.sh ID 'command'   -- runs in /work/rr98/ex, log = ID.log (stdout+stderr merged)
id=$1; shift
cd /work/rr98/ex
export HF_HUB_OFFLINE=1 PATH=/work/rrvenv/bin:$PATH
printf '%s\n' "$*" > tmp/$id.cmd
bash -c "$*" > $id.log 2>&1
echo "rc=$?" > tmp/$id.rc
cat tmp/$id.rc
