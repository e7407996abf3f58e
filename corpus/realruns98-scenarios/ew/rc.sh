#!/bin/bash
# usage: rc.sh <id> <command...>   runs from /work/rr98/ew, logs stdout+stderr merged to <id>.log
id=$1; shift
cd /work/rr98/ew
echo "$id	$*" >> commands.tsv
bash -c "$*" > $id.log 2>&1
echo "$id rc=$?"
