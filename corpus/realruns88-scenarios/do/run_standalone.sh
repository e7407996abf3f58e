#!/bin/bash
# Starts N flax_dp.py processes by hand (no torchrun), as a multi-host job script would.
# usage: run_standalone.sh N COORD [KILL_ID KILL_AFTER_S] [-- extra args]; COORD_OVERRIDE_ID/COORD_OVERRIDE set a per-process coordinator
N=$1; COORD=$2; KILL_ID=${3:-}; KILL_AFTER=${4:-}; shift 4; [ "$1" = "--" ] && shift
PY=/work/rr88/do/venv-extra/bin/python
pids=()
for ((i=0;i<N;i++)); do
  c=$COORD; [ "${COORD_OVERRIDE_ID:-x}" = "$i" ] && c=$COORD_OVERRIDE
  $PY -u /work/rr88/do/scenarios/flax_dp.py --coordinator "$c" --process-id $i --num-processes $N "$@" &
  pids+=($!)
done
if [ -n "$KILL_ID" ]; then sleep "$KILL_AFTER"; echo "+ kill -9 ${pids[$KILL_ID]}   # process $KILL_ID"; kill -9 ${pids[$KILL_ID]}; fi
rc=0; for i in "${!pids[@]}"; do wait ${pids[$i]}; r=$?; echo "process $i exited with $r"; [ $r -ne 0 ] && rc=$r; done
exit $rc
