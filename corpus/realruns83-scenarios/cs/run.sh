#!/bin/bash
# run.sh ID cmd... : run in /work/rr83/cs, merged output to ID.log
ID=$1; shift
cd /work/rr83/cs
echo "$*" > tmp/cmd.$ID
timeout 180 "$@" > $ID.log 2>&1
echo "rc=$? $ID"
