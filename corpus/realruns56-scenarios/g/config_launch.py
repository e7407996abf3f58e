#!/usr/bin/env python
"""Small DDP regression trainer with the launch/config plumbing real repos grow.

--launcher env   : expects torchrun-style env vars (RANK, WORLD_SIZE, ...)
--launcher spawn : starts its own workers with torch.multiprocessing.spawn,
                   reading world size / address from the run config (env vars)
"""
import argparse
import os
import re
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_args(argv=None):
    p = argparse.ArgumentParser(description="regression trainer")
    p.add_argument("--launcher", choices=["env", "spawn"], default="env")
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--local_rank", type=int, default=0, help="set by the launcher")
    p.add_argument("--device", default="cuda" if not os.environ.get("FORCE_CPU") else "cpu")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--grad-accum", type=int, default=1)
    p.add_argument("--sched-per-microbatch", action="store_true")
    p.add_argument("--freeze", default="", help="regex of parameter names to freeze")
    p.add_argument("--lr", type=float, default=1e-2)
    p.add_argument("--setup-in-trainer", action="store_true")
    return p.parse_args(argv)


def setup_distributed(rank=None, world=None):
    if rank is None:
        dist.init_process_group(backend="gloo", init_method="env://", timeout=timedelta(seconds=20))
    else:
        dist.init_process_group(backend="gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    return dist.get_rank(), dist.get_world_size()


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 1)

    def forward(self, x):
        return self.head(self.backbone(x)).squeeze(-1)


class Trainer:
    def __init__(self, args):
        self.args = args
        if args.setup_in_trainer:
            # trainer is meant to be usable standalone as well
            self.rank, self.world = setup_distributed()
        else:
            self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.device = torch.device(args.device)
        model = Net()
        if args.freeze:
            pat = re.compile(args.freeze)
            for n, p in model.named_parameters():
                if pat.search(n):
                    p.requires_grad_(False)
            ntrain = sum(p.numel() for p in model.parameters() if p.requires_grad)
            print(f"[rank{self.rank}] froze params matching {args.freeze!r}; trainable params: {ntrain}", flush=True)
        self.model = DDP(model.to(self.device))
        g = torch.Generator().manual_seed(0)
        x = torch.randn(2048, 16, generator=g)
        y = x[:, :4].sum(-1) + 0.1 * torch.randn(2048, generator=g)
        ds = TensorDataset(x, y)
        self.sampler = DistributedSampler(ds, num_replicas=self.world, rank=self.rank)
        self.loader = DataLoader(ds, batch_size=32, sampler=self.sampler)
        self.opt = torch.optim.SGD([p for p in self.model.parameters() if p.requires_grad], lr=args.lr, momentum=0.9)
        total_steps = args.epochs * len(self.loader) // args.grad_accum
        self.sched = torch.optim.lr_scheduler.OneCycleLR(self.opt, max_lr=args.lr, total_steps=total_steps)
        if self.rank == 0:
            print(f"[rank0] {len(self.loader)} batches/epoch, grad_accum={args.grad_accum}, "
                  f"OneCycleLR total_steps={total_steps}", flush=True)

    def fit(self):
        a = self.args
        step = 0
        for epoch in range(a.epochs):
            self.sampler.set_epoch(epoch)
            for i, (xb, yb) in enumerate(self.loader):
                xb, yb = xb.to(self.device), yb.to(self.device)
                loss = F.mse_loss(self.model(xb), yb) / a.grad_accum
                loss.backward()
                if a.sched_per_microbatch:
                    self.sched.step()
                if (i + 1) % a.grad_accum == 0:
                    self.opt.step()
                    self.opt.zero_grad()
                    if not a.sched_per_microbatch:
                        self.sched.step()
                    step += 1
                    if self.rank == 0 and step % 8 == 0:
                        print(f"[rank0] epoch {epoch} step {step} loss {loss.item() * a.grad_accum:.4f} "
                              f"lr {self.sched.get_last_lr()[0]:.5f}", flush=True)
        if self.rank == 0:
            print("[rank0] finished training", flush=True)


def worker(rank, args, world):
    setup_distributed(rank, world)
    Trainer(args).fit()
    dist.destroy_process_group()


def main():
    args = get_args()
    if args.launcher == "spawn":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29690")
        world = int(os.environ.get("WORLD_SIZE", args.nprocs))
        print(f"spawning {args.nprocs} workers (world_size={world}, master={os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']})", flush=True)
        mp.spawn(worker, args=(args, world), nprocs=args.nprocs, join=True)
    else:
        setup_distributed()
        Trainer(args).fit()
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
