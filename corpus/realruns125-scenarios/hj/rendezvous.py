"""Start-up / rendezvous scenarios for a small gloo DDP job.

--wait-marker-rank R : rank R waits (before init_process_group) for the "dataset prepared" marker file
                       that the preprocessing job should have written under --data-dir
--shard-per-rank     : every rank loads <data-dir>/shard-<rank:05d>.pt (rank-local shard files)
"""
import argparse
import datetime
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="/work/rr125/hj/runs/data")
p.add_argument("--wait-marker-rank", type=int, default=-1)
p.add_argument("--shard-per-rank", action="store_true")
p.add_argument("--init-timeout", type=int, default=20)
p.add_argument("--steps", type=int, default=20)
args = p.parse_args()

rank = int(os.environ["RANK"])
world = int(os.environ["WORLD_SIZE"])
print(f"[rank {rank}/{world}] host={os.uname().nodename} pid={os.getpid()} "
      f"master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}", flush=True)

if rank == args.wait_marker_rank:
    marker = os.path.join(args.data_dir, "_PREPARED")
    while not os.path.exists(marker):
        print(f"[rank {rank}] waiting for preprocessing to finish ({marker} not found yet)", flush=True)
        time.sleep(10)

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.init_timeout))
print(f"[rank {rank}] process group ready", flush=True)
torch.manual_seed(0)
torch.set_num_threads(1)

if args.shard_per_rank:
    path = os.path.join(args.data_dir, f"shard-{rank:05d}.pt")
    print(f"[rank {rank}] loading {path}", flush=True)
    X, Y = torch.load(path)
else:
    g = torch.Generator().manual_seed(rank)
    X = torch.randn(320, 16, generator=g)
    Y = X.sum(1, keepdim=True)

model = DDP(nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1)))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for step in range(args.steps):
    xb, yb = X[step * 16:(step + 1) * 16], Y[step * 16:(step + 1) * 16]
    loss = nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 4:
        print(f"[rank {rank}] step {step + 1} loss={loss.item():.4f}", flush=True)
    time.sleep(0.1)
dist.barrier()
dist.destroy_process_group()
print(f"[rank {rank}] finished", flush=True)
