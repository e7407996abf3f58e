#!/bin/bash
# outside.sh LOG PATTERN -- CMD...   : wait until PATTERN appears in LOG, then run CMD (the outside actor)
log=$1; pat=$2; shift 3
for i in $(seq 1 600); do
  grep -q -- "$pat" "$log" 2>/dev/null && break
  sleep 0.2
done
eval "$@"
