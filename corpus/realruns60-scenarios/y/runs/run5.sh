cd /work/rr60/y
export HF_HUB_OFFLINE=1 PATH=/work/rrvenv/bin:$PATH
S=scenarios/hf_trainer_ddp.py
# worker SIGKILLed from outside (rank 2)
timeout 180 torchrun --nproc-per-node 3 --master-port 30191 $S --steps 300 --step-sleep 0.15 --save-steps 100 --out /tmp/rr60y_k1 > r60y-worker-sigkill-rank2.log 2>&1 &
sleep 22
for p in $(pgrep -f -- "--out /tmp/rr60y_k1"); do if tr '\0' '\n' < /proc/$p/environ | grep -qx 'RANK=2'; then echo killing $p; kill -9 $p; fi; done
wait
# launcher receives SIGTERM (job timer)
timeout -s TERM 25 torchrun --nproc-per-node 2 --master-port 30192 $S --steps 400 --step-sleep 0.1 --save-steps 200 --log-ts --out /tmp/rr60y_k2 > r60y-launcher-sigterm.log 2>&1
# Ctrl-C on a single-process run
timeout -s INT 20 python $S --steps 400 --step-sleep 0.1 --save-steps 200 --out /tmp/rr60y_k3 > r60y-single-ctrl-c.log 2>&1
echo BATCH5 DONE
