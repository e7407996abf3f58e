#!/bin/bash
# minimal batch-scheduler stand-in: run a job with a wall-clock limit, then SIGTERM the job's
# process group, wait a grace period, then SIGKILL whatever is left.
# usage: sched_wrap.sh JOBID LIMIT_S GRACE_S cmd...
jobid=$1; limit=$2; grace=$3; shift 3
echo "sched[$jobid]: starting job step 0 on $(hostname): $*"
setsid "$@" &
pid=$!
for ((i=0;i<limit;i++)); do
  sleep 1
  kill -0 $pid 2>/dev/null || { wait $pid; rc=$?; echo "sched[$jobid]: job finished rc=$rc"; exit $rc; }
done
echo "sched[$jobid]: wall-clock limit of ${limit}s reached, sending SIGTERM to job (grace ${grace}s)"
kill -TERM -- -$pid
for ((i=0;i<grace;i++)); do
  sleep 1
  kill -0 $pid 2>/dev/null || { wait $pid; rc=$?; echo "sched[$jobid]: job exited rc=$rc after SIGTERM"; exit $rc; }
done
echo "sched[$jobid]: job still running after grace period, sending SIGKILL"
kill -KILL -- -$pid
wait $pid; rc=$?
echo "sched[$jobid]: job killed rc=$rc"
exit $rc
