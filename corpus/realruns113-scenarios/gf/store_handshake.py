"""Rank 0 reads the run config and publishes it through the c10d TCPStore; the other ranks wait for it.
Launch with torchrun (env:// init)."""
import argparse, datetime, json, os, time
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--config", required=True)
p.add_argument("--steps", type=int, default=20)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
store = dist.distributed_c10d._get_default_store()
print(f"[rank {rank}] initialised, waiting for run config", flush=True)
if rank == 0:
    with open(args.config) as f:
        cfg = json.load(f)
    lr = float(cfg["optim"]["lr"])           # config schema: {"optim": {"lr": ...}, "model": {...}}
    hidden = int(cfg["model"]["hidden"])
    store.set("run_config", json.dumps({"lr": lr, "hidden": hidden}))
else:
    cfg = json.loads(store.get("run_config"))   # blocks until rank 0 publishes
    lr, hidden = cfg["lr"], cfg["hidden"]
print(f"[rank {rank}] config lr={lr} hidden={hidden}", flush=True)
model = DDP(nn.Sequential(nn.Linear(10, hidden), nn.GELU(), nn.Linear(hidden, 1)))
opt = torch.optim.SGD(model.parameters(), lr=lr)
x = torch.randn(128, 10)
for s in range(args.steps):
    loss = model(x).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
    if rank == 0 and s % 5 == 0: print(f"step {s} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
