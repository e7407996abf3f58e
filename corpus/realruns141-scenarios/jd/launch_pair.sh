#!/bin/bash
# start N copies of a script as processes 0..N-1 (a hand-rolled multi-host launch on one box)
N=$1; shift
for ((i=0;i<N;i++)); do /work/rrvenv/bin/python -u "$@" --pid $i --nproc $N & done
wait
