cd /work/rr60/y
export HF_HUB_OFFLINE=1 PATH=/work/rrvenv/bin:$PATH
S=scenarios/hf_trainer_ddp.py
timeout 180 torchrun --nproc-per-node 2 --master-port 30196 $S --fault corrupt_json --fault-rank 1 --fault-step 9 --workers 2 --steps 24 --log-ts --out /tmp/rr60y_cj > r60y-corrupt-jsonl-worker.log 2>&1
echo BATCH7 DONE
