#!/bin/bash
# detach ranks with nohup, all appending to one shared log; monitor loop runs alongside
# usage: nohup_launch.sh LOGFILE PORT NPROC trainer args...
set -e
LOG=$1; PORT=$2; N=$3; shift 3
export MASTER_ADDR=127.0.0.1 MASTER_PORT=$PORT WORLD_SIZE=$N PYTHONUNBUFFERED=1
: > "$LOG"
( while true; do echo "[monitor $(date -u +%T)] load: $(cut -d' ' -f1-3 /proc/loadavg) mem_avail_kb: $(awk '/MemAvailable/{print $2}' /proc/meminfo)"; sleep 2; done ) >> "$LOG" 2>&1 &
MON=$!
pids=()
for r in $(seq 0 $((N-1))); do
  RANK=$r nohup /work/rrvenv/bin/python /work/rr59/x/scenarios/handrank_train.py "$@" >> "$LOG" 2>&1 &
  pids+=($!)
done
echo "started ranks ${pids[*]} (monitor $MON), logging to $LOG"
rc=0
for p in "${pids[@]}"; do wait $p || rc=$?; done
kill $MON
wait $MON || true
echo "ranks exited with status $rc"
exit $rc
