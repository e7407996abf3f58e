#!/bin/bash
# launch_mwms.sh MODE NWORKERS PORTBASE -- args...   MODE: plain | prefix | logdir:DIR
mode=$1; n=$2; base=$3; shift 4
ports=$(seq -s, $base $((base+n-1)))
pids=()
for i in $(seq 0 $((n-1))); do
  case $mode in
    plain)  /work/tfvenv/bin/python scenarios/tf_mwms.py --index $i --ports $ports "$@" & ;;
    prefix) /work/tfvenv/bin/python -u scenarios/tf_mwms.py --index $i --ports $ports "$@" > >(sed -u "s/^/[worker$i] /") 2>&1 & ;;
    logdir:*) d=${mode#logdir:}; mkdir -p $d; /work/tfvenv/bin/python scenarios/tf_mwms.py --index $i --ports $ports "$@" > $d/worker$i.log 2>&1 & ;;
  esac
  pids+=($!)
  [ -n "$PIDDIR" ] && mkdir -p $PIDDIR && echo $! > $PIDDIR/worker$i.pid
done
rc=0
for i in "${!pids[@]}"; do wait ${pids[$i]}; r=$?; echo "launcher: worker $i exited with code $r"; [ $r -ne 0 ] && rc=$r; done
exit $rc
