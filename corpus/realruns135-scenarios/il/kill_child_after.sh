#!/bin/bash
# run a command, then after $1 seconds SIGKILL one of its child processes (newest child of the main pid)
# usage: kill_child_after.sh SECONDS cmd args...   (simulates the kernel OOM killer picking a worker)
cd /work/rr135/il
secs=$1; shift
"$@" &
main=$!
sleep "$secs"
victim=$(pgrep -P $main | tail -1)
[ -n "$victim" ] && kill -9 $victim
wait $main
