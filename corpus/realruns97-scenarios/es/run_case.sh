#!/bin/bash
# usage: run_case.sh ID 'command'   -> runs command in /work/rr97/es, merged output to ID.log
id=$1; shift
cd /work/rr97/es; export PATH=/work/rrvenv/bin:$PATH HF_HUB_OFFLINE=1
mkdir -p work/cmds
printf '%s' "$*" > work/cmds/$id.cmd
bash -c "$*" > $id.log 2>&1
echo "rc=$?" > work/cmds/$id.rc
