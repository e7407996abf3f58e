"""torch.multiprocessing.spawn / manual-env launcher for a tiny DDP MLP.

Modes:
  spawn  : python spawn_train.py --nprocs N      (mp.spawn sets up env per rank)
  single : python spawn_train.py --single         (relies on RANK/WORLD_SIZE/MASTER_* from the shell)
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--single", action="store_true")
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--master-port", default="30960")
    p.add_argument("--hosts", default=None,
                   help="comma separated MASTER_ADDR per rank (as read from a hostfile)")
    p.add_argument("--set-port", type=int, default=1, help="export MASTER_PORT in the worker")
    p.add_argument("--pg-timeout", type=int, default=15)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--init-method", default="env://")
    p.add_argument("--noisy", action="store_true", help="old-style recipe code that triggers deprecation warnings")
    return p.parse_args()


def train(rank, args, world):
    addr = args.master_addr
    if args.hosts:
        addr = args.hosts.split(",")[rank]
    if not args.single:
        os.environ["MASTER_ADDR"] = addr
        if args.set_port:
            os.environ["MASTER_PORT"] = str(args.master_port)
        os.environ["RANK"] = str(rank)
        os.environ["WORLD_SIZE"] = str(world)
    print(f"[worker {rank}] connecting to {os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')} "
          f"world_size={os.environ.get('WORLD_SIZE')}", flush=True)
    t0 = time.time()
    dist.init_process_group("gloo", init_method=args.init_method, timeout=timedelta(seconds=args.pg_timeout))
    rank = dist.get_rank()
    world = dist.get_world_size()
    print(f"[worker {rank}] process group ready in {time.time() - t0:.1f}s (world={world})", flush=True)
    torch.manual_seed(rank)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    if args.noisy:
        sched.step()  # old recipe: scheduler stepped at the top of training
    for step in range(args.steps):
        x = torch.randn(32, 16)
        y = x.sum(1, keepdim=True)
        if args.noisy:
            att = nn.functional.softmax(x)  # implicit dim, legacy code path
            x = x * att.detach() * x.shape[1]
            y = x.sum(1, keepdim=True)
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if rank == 0 and step % 5 == 0:
            print(f"[worker 0] step {step} mse {loss.item():.4f}", flush=True)
        time.sleep(0.05)
    dist.barrier()
    if rank == 0:
        print("[worker 0] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    args = get_args()
    if args.single:
        train(int(os.environ.get("RANK", 0)), args, int(os.environ.get("WORLD_SIZE", 1)))
    else:
        mp.spawn(train, args=(args, args.nprocs), nprocs=args.nprocs, join=True)
