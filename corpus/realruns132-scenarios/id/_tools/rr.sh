#!/bin/bash
# usage: rr.sh ID 'command'
cd /work/rr132/id
id=$1; shift
echo "$id	$*" >> cmds.tsv
bash -c "$*" > "$id.log" 2>&1
echo "rc=$?"
