cd /work/rr60/y
export HF_HUB_OFFLINE=1 PATH=/work/rrvenv/bin:$PATH
A=scenarios/accel_loop.py
S=scenarios/hf_trainer_ddp.py
timeout 180 torchrun --nproc-per-node 2 --tee 3 --master-port 30193 $S --steps 16 --out /tmp/rr60y_imm > r60y-output-dir-immutable.log 2>&1
rm -rf /tmp/rr60y_ld3; timeout 180 torchrun --nproc-per-node 3 --log-dir /tmp/rr60y_ld3 --redirects 3 --tee 3 --master-port 30194 $A --fault weights_only --resume /tmp/rr60y_accel_ckpt/step_20 --steps 30 --ckpt /tmp/rr60y_ck_wo > /tmp/rr60y_wo.console 2>&1; mkdir -p r60y-accel-resume-weights-only.d; cp -r /tmp/rr60y_ld3/* r60y-accel-resume-weights-only.d/
rm -rf /tmp/rr60y_lfs; cp -r /tmp/rr60y_accel_ckpt/step_20 /tmp/rr60y_lfs
printf 'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 15842\n' > /tmp/rr60y_lfs/loader_state.pt
timeout 180 python -m torch.distributed.run --nproc-per-node 2 --master-port 30195 $A --fault weights_only --resume /tmp/rr60y_lfs --steps 30 --ckpt /tmp/rr60y_ck_lfs > r60y-accel-resume-lfs-pointer.log 2>&1
echo BATCH6 DONE
