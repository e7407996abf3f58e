"""Minimal DDP worker used for launcher-level faults (rendezvous, signals, env)."""
import os, sys, time, argparse
from datetime import timedelta
import torch, torch.distributed as dist
from tqdm import tqdm
p = argparse.ArgumentParser(); p.add_argument("--steps", type=int, default=50); p.add_argument("--sleep", type=float, default=0.3)
p.add_argument("--tqdm", action="store_true"); p.add_argument("--pg-timeout", type=int, default=30)
a = p.parse_args()
dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
rank = dist.get_rank()
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
it = range(a.steps)
if a.tqdm and rank == 0:
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=80, mininterval=0)
for s in it:
    loss = model(torch.randn(16, 8)).pow(2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    if rank == 0 and not a.tqdm and s % 5 == 0:
        print(f"epoch 0 step {s} loss={loss.item():.4f}", flush=True)
    time.sleep(a.sleep)
dist.destroy_process_group()
if rank == 0: print("done", flush=True)
