#!/bin/bash
# minimal job wrapper: jobwrap.sh JOBID [TASKID] -- command...
JOBID=$1; shift
TASK=""
if [ "$1" != "--" ]; then TASK=$1; shift; fi
shift
echo "================ JOB $JOBID${TASK:+_$TASK} ================"
echo "job_id     : $JOBID${TASK:+ (array task $TASK)}"
echo "job_name   : lm-pretrain-tiny"
echo "node_list  : $(hostname)"
echo "cpus       : $(nproc)"
echo "submit_dir : $PWD"
echo "start_time : $(date -u +%Y-%m-%dT%H:%M:%S)"
echo "command    : $*"
echo "============================================================"
"$@"
rc=$?
echo "============================================================"
echo "end_time   : $(date -u +%Y-%m-%dT%H:%M:%S)"
echo "exit_status: $rc"
echo "job $JOBID${TASK:+_$TASK} $( [ $rc -eq 0 ] && echo COMPLETED || echo FAILED )"
exit $rc
