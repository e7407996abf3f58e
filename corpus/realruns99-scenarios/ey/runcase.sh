#!/bin/bash
# usage: runcase.sh ID 'command'   -> runs command in bash (env.sh sourced), log = stdout+stderr merged
source /work/rr99/ey/env.sh
id=$1; shift
echo "$*" > runs/$id.cmd
bash -c "$*" > $id.log 2>&1
echo "rc=$?" > runs/$id.rc
