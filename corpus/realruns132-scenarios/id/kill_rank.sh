#!/bin/bash
# run keras_dist under torchrun (3 ranks, TORCH_DISTRIBUTED_DEBUG=INFO) and SIGKILL the worker whose RANK=$1 after $2 s
cd /work/rr132/id
R=$1; T=$2
TORCH_DISTRIBUTED_DEBUG=INFO timeout 150 /work/rrvenv/bin/torchrun --nproc-per-node 3 --master-port 46326 scenarios/keras_dist.py --epochs 400 --shard-dir /tmp/rr132id_shards3 &
top=$!
sleep $T
tr=$(pgrep -P $top | head -1)
for w in $(pgrep -P $tr); do
  if tr '\0' '\n' < /proc/$w/environ | grep -qx "RANK=$R" && [ "$(readlink /proc/$w/cwd)" = /work/rr132/id ]; then kill -9 $w; fi
done
wait $top
