#!/bin/bash
# Run two torchrun "nodes" side by side on this machine and merge their output like a
# multi-host launcher would show it.  usage: run2n.sh STYLE LOG "NODE0 CMD" "NODE1 CMD"
#   STYLE: pdsh (host: ), srun (N: ), kubectl ([pod/..] ), mpirun ([1,N]<stdout>:)
style=$1; log=$2; c0=$3; c1=$4
pfx() {
  case $style in
    pdsh)    awk -v h="$1" '{print h": "$0; fflush()}' ;;
    srun)    awk -v h="$2" '{print h": "$0; fflush()}' ;;
    kubectl) awk -v h="$2" '{print "[pod/llm-pretrain-worker-"h"/pytorch] "$0; fflush()}' ;;
    mpirun)  awk -v h="$2" '{print "[1,"h"]<stdout>:"$0; fflush()}' ;;
  esac
}
: > "$log"
( FAKE_HOST=gpu-a01 bash -c "$c0" 2>&1 | pfx gpu-a01 0 >> "$log" ) &
p0=$!
sleep ${NODE1_DELAY:-1}
( FAKE_HOST=gpu-a02 bash -c "$c1" 2>&1 | pfx gpu-a02 1 >> "$log" ) &
p1=$!
wait $p0; wait $p1
