"""DDP training started with torch.multiprocessing.spawn (no torchrun)."""
import argparse
import os
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def setup_distributed(rank, world, port):
    """Shared helper from utils: idempotent in the original repo... or so we thought."""
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))


def make_loss(label_smoothing):
    return lambda out, y: F.cross_entropy(out, y, label_smoothing=label_smoothing)


def worker(rank, world, port, loss_fn, args):
    setup_distributed(rank, world, port)
    if args.fail == "init-twice":
        # trainer module also initialises the group "to be safe"
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))
    if args.noisy:
        model = model.half().float()
        torch.backends.cudnn.benchmark = True
        x0 = torch.randn(4, 32)
        _ = torch.tensor(x0)  # copy-construct warning
    ddp = DDP(model)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
    if args.noisy:
        sched.step()  # scheduler stepped before optimizer: warns
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        x = torch.randn(32, 32, generator=g)
        y = torch.randint(0, 8, (32,), generator=g)
        loss = loss_fn(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if rank == 0 and step % 5 == 0:
            print(f"rank0 step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}", flush=True)
        time.sleep(0.1)
    dist.barrier()
    if rank == 0:
        print("training complete", flush=True)
    dist.destroy_process_group()


def default_loss(out, y):
    return F.cross_entropy(out, y)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=40640)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--fail", default="none")
    p.add_argument("--label-smoothing", type=float, default=0.0)
    p.add_argument("--noisy", action="store_true")
    args = p.parse_args()
    loss_fn = make_loss(args.label_smoothing) if args.label_smoothing > 0 else default_loss
    print(f"spawning {args.world} workers", flush=True)
    mp.spawn(worker, args=(args.world, args.port, loss_fn, args), nprocs=args.world, join=True)
