#!/bin/bash
# usage: kill_rank_driver.sh LOG RANK STEP -- <launch command...>
# Starts the launch command with output to LOG, waits until RANK prints "step STEP", then sends SIGKILL
# to that rank's pid (as printed by the script itself) - simulates the kernel/OOM killer or an admin kill.
log=$1; r=$2; st=$3; shift 4
"$@" > "$log" 2>&1 &
launcher=$!
pid=""
for i in $(seq 1 600); do
  sleep 0.2
  [ -z "$pid" ] && pid=$(grep -o "\[rank $r/[0-9]*\] pid=[0-9]*" "$log" | head -1 | sed 's/.*pid=//')
  if [ -n "$pid" ] && grep -q "\[rank $r\] step *$st " "$log"; then kill -9 "$pid"; break; fi
  kill -0 $launcher 2>/dev/null || break
done
wait $launcher
