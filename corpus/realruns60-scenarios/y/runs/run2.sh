cd /work/rr60/y
export HF_HUB_OFFLINE=1 PATH=/work/rrvenv/bin:$PATH
S=scenarios/hf_trainer_ddp.py
timeout 180 torchrun --nproc-per-node 3 --master-port 30161 $S --fault token_oob --fault-rank 1 --fault-step 5 --out /tmp/rr60y_a > r60y-token-oob-rank1.log 2>&1
timeout 180 torchrun --nproc-per-node 3 --tee 3 --master-port 30162 $S --fault ragged --fault-rank 2 --fault-step 7 --out /tmp/rr60y_b > r60y-ragged-rank2-tee.log 2>&1
timeout 180 torchrun --nproc-per-node 2 --master-port 30165 $S --fault eval_rank0 --fault-step 6 --pg-timeout 15 --out /tmp/rr60y_e > r60y-eval-rank0-only.log 2>&1
timeout 180 torchrun --nproc-per-node 3 --master-port 30166 $S --fault monitored_hang --fault-rank 1 --fault-step 4 --pg-timeout 30 --out /tmp/rr60y_f > r60y-monitored-barrier-rank1.log 2>&1
mkdir -p /tmp/rr60y_s; rm -f /tmp/rr60y_s/runs.db; timeout 180 torchrun --nproc-per-node 3 --master-port 30167 $S --fault sqlite --out /tmp/rr60y_s > r60y-sqlite-locked.log 2>&1
timeout 180 torchrun --nproc-per-node 2 --master-port 30168 $S --fault bad_genconfig --out /tmp/rr60y_gc > r60y-genconfig-save.log 2>&1
timeout 180 torchrun --nproc-per-node 2 --master-port 30169 $S --fault unused_head --out /tmp/rr60y_u > r60y-ddp-unused-head.log 2>&1
echo BATCH2 DONE
