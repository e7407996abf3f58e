#!/bin/bash
# usage: run.sh ID CMD...   runs command in /work/rr99/fa with merged output to ID.log
cd /work/rr99/fa; id=$1; shift
export PYTHONPATH=/work/rr99/fa/pylib HF_HUB_OFFLINE=1
echo "$*" > cmds/$id.cmd
bash -c "$*" > $id.log 2>&1; echo "rc=$?" > cmds/$id.rc
