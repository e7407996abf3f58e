#!/bin/bash
# usage: run.sh ID 'command'   -> ID.log, ID.cmd
id=$1; shift
cd /work/rr95/en
echo "$*" > cmds/$id.cmd
bash -c "$*" > $id.log 2>&1
echo "rc=$?" > cmds/$id.rc
tail -n 25 $id.log; cat cmds/$id.rc
