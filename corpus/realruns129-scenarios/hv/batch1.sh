#!/bin/bash
cd /work/rr129/hv
export HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
R=scenarios/run2.sh
$R r129hv-shape-rank3 46181 "" "" --fault shape --fault-rank 3 --fault-step 2 --pg-timeout 15
$R r129hv-embidx-rank2-logging 46182 "--tee 3" "--tee 3" --fault index --fault-rank 2 --use-logging --pg-timeout 15
$R r129hv-fnf-shard-rank1 46183 "" "" --fault fnf --fault-rank 1 --pg-timeout 15
$R r129hv-unused-rank3 46184 "" "" --fault unused --fault-rank 3 --fault-step 2 --pg-timeout 15
$R r129hv-nan-rank1 46185 "--tee 3" "--tee 3" --fault nan --fault-rank 1 --pg-timeout 15
$R r129hv-hang-rank1-gloo-timeout 46186 "" "" --fault hang --fault-rank 1 --fault-step 3 --pg-timeout 15
$R r129hv-sampler-localws 46187 "" "" --fault sampler-rank --use-logging --pg-timeout 15
$R r129hv-bn-batch-of-one 46188 "" "" --fault bn-one --fault-rank 1 --pg-timeout 15
$R r129hv-config-json-node-b 46189 "" "" --fault config-json --fault-rank 2 --pg-timeout 15
LAUNCH="/work/rrvenv/bin/python -m torch.distributed.run" $R r129hv-healthy-tqdm 46180 "" "" --fault warn --progress --steps 6
