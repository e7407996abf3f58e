cd /work/rr60/y
export HF_HUB_OFFLINE=1 PATH=/work/rrvenv/bin:$PATH
A=scenarios/accel_loop.py
S=scenarios/hf_trainer_ddp.py
rm -rf /tmp/rr60y_accel_ckpt
timeout 180 python $A --spawn 2 --port 30181 --steps 20 --ckpt /tmp/rr60y_accel_ckpt > r60y-accel-spawn-healthy.log 2>&1
timeout 180 accelerate launch --num_processes 3 --main_process_port 30182 --cpu $A --fault weights_only --resume /tmp/rr60y_accel_ckpt/step_20 --steps 30 --ckpt /tmp/rr60y_ck_wo > r60y-accel-resume-weights-only.log 2>&1
timeout 180 torchrun --nproc-per-node 2 --master-port 30183 $A --resume /tmp/rr60y_accel_ckpt/step_20 --n-embd 96 --steps 30 --ckpt /tmp/rr60y_ck_sd > r60y-accel-resume-embd-mismatch.log 2>&1
rm -rf /tmp/rr60y_ck_full; mkdir -p /tmp/rr60y_ck_full; ln -s /dev/full /tmp/rr60y_ck_full/latest.json
timeout 180 python $A --spawn 2 --port 30184 --steps 20 --ckpt /tmp/rr60y_ck_full > r60y-accel-spawn-latest-json-full.log 2>&1
timeout 180 accelerate launch --num_processes 2 --main_process_port 30185 --cpu $A --mp fp16 > r60y-accel-fp16-cpu.log 2>&1
mkdir -p /tmp/rr60y_nobody/hf && chown -R 65534:65534 /tmp/rr60y_nobody; mkdir -p /tmp/rr60y_rootckpt; chmod 755 /tmp/rr60y_rootckpt
HOME=/tmp/rr60y_nobody HF_HOME=/tmp/rr60y_nobody/hf timeout 180 setpriv --reuid=65534 --regid=65534 --clear-groups torchrun --nproc-per-node 2 --master-port 30186 $A --steps 20 --ckpt /tmp/rr60y_rootckpt/run7 > r60y-accel-ckpt-not-writable.log 2>&1
echo BATCH4 DONE
