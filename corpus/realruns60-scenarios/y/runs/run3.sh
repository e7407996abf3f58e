cd /work/rr60/y
export HF_HUB_OFFLINE=1 PATH=/work/rrvenv/bin:$PATH
S=scenarios/hf_trainer_ddp.py
timeout 180 torchrun --nproc-per-node 3 --tee 3 --master-port 30171 $S --fault noisy --steps 24 --eval-steps 8 --out /tmp/rr60y_h2 > r60y-healthy-eval-tee.log 2>&1
rm -rf /tmp/rr60y_ld2; timeout 180 torchrun --nproc-per-node 2 --log-dir /tmp/rr60y_ld2 --redirects 3 --tee 3 --master-port 30172 $S --workers 2 --steps 20 --out /tmp/rr60y_h3 > /tmp/rr60y_h3.console 2>&1; mkdir -p r60y-healthy-logdir.d; cp -r /tmp/rr60y_ld2/* r60y-healthy-logdir.d/
timeout 180 python $S --fault noisy --steps 30 --log-ts --out /tmp/rr60y_h4 > r60y-healthy-single-logging.log 2>&1
rm -rf /tmp/rr60y_c1; cp -r /tmp/rr60y_ck_good /tmp/rr60y_c1; truncate -s 20000 /tmp/rr60y_c1/model.safetensors
timeout 180 torchrun --nproc-per-node 2 --master-port 30173 $S --resume /tmp/rr60y_c1 --out /tmp/rr60y_o1 > r60y-resume-truncated-safetensors.log 2>&1
rm -rf /tmp/rr60y_c2; cp -r /tmp/rr60y_ck_good /tmp/rr60y_c2; truncate -s 300000 /tmp/rr60y_c2/optimizer.pt
timeout 180 torchrun --nproc-per-node 2 --master-port 30174 $S --resume /tmp/rr60y_c2 --out /tmp/rr60y_o2 > r60y-resume-truncated-optimizer.log 2>&1
timeout 180 torchrun --nproc-per-node 2 --master-port 30175 $S --resume /tmp/rr60y_ck_good --n-layer 3 --out /tmp/rr60y_o3 > r60y-resume-wrong-depth.log 2>&1
(ulimit -v 8000000; timeout 180 torchrun --nproc-per-node 2 --master-port 30176 $S --fault eval_oom --fault-rank 1 --eval-steps 6 --out /tmp/rr60y_o4 > r60y-eval-logits-alloc.log 2>&1)
(ulimit -f 200; timeout 180 torchrun --nproc-per-node 2 --master-port 30177 $S --out /tmp/rr60y_o5 > r60y-save-file-size-limit.log 2>&1)
timeout 180 python -m torch.distributed.run --nproc-per-node 2 --master-port 30178 $S --fault old_arg --out /tmp/rr60y_o6 > r60y-evaluation-strategy-arg.log 2>&1
echo BATCH3 DONE
