cd /work/rr60/y
export HF_HUB_OFFLINE=1 PATH=/work/rrvenv/bin:$PATH
S=scenarios/hf_trainer_ddp.py
timeout 180 torchrun --nproc-per-node 3 --master-port 30151 $S --fault token_oob --fault-rank 1 --fault-step 5 --out /tmp/rr60y_a > r60y-token-oob-rank1.log 2>&1
timeout 180 torchrun --nproc-per-node 3 --tee 3 --master-port 30152 $S --fault ragged --fault-rank 2 --fault-step 7 --out /tmp/rr60y_b > r60y-ragged-rank2-tee.log 2>&1
timeout 180 python -m torch.distributed.run --nproc-per-node 2 --master-port 30153 $S --fault nopad --out /tmp/rr60y_c > r60y-nopad-collator.log 2>&1
rm -rf /tmp/rr60y_ld1; timeout 180 torchrun --nproc-per-node 2 --log-dir /tmp/rr60y_ld1 --redirects 3 --tee 3 --master-port 30154 $S --fault cb_keyerror --fault-rank 0 --fault-step 6 --out /tmp/rr60y_d > r60y-cb-keyerror.console 2>&1
TORCH_DISTRIBUTED_DEBUG=DETAIL timeout 180 torchrun --nproc-per-node 2 --master-port 30155 $S --fault eval_rank0 --fault-step 6 --pg-timeout 15 --out /tmp/rr60y_e > r60y-eval-rank0-detail.log 2>&1
timeout 180 torchrun --nproc-per-node 3 --master-port 30156 $S --fault monitored_hang --fault-rank 1 --fault-step 5 --pg-timeout 30 --out /tmp/rr60y_f > r60y-monitored-hang.log 2>&1
(ulimit -n 200; timeout 180 torchrun --nproc-per-node 2 --master-port 30157 $S --fault fd_leak --fault-rank 1 --steps 40 --out /tmp/rr60y_g > r60y-fd-leak.log 2>&1)
echo BATCH1 DONE
