#!/usr/bin/env python
"""MLP regression trained with torch.multiprocessing.spawn + DDP (gloo, CPU).

Scenario family "spawn_train". Flags:
  --fault none          healthy run (prints the usual warnings: DataLoader worker count, scheduler order,
                        a few non-finite batches from outliers in the raw data that are skipped)
  --fault local-transform   the feature transform is a lambda defined inside main() and passed to
                        mp.spawn (cannot be pickled for the spawn start method)
"""
import argparse
import logging
import math
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class Regression(Dataset):
    def __init__(self, n, dim, transform=None, outliers=()):
        g = np.random.default_rng(7)
        self.x = g.normal(size=(n, dim)).astype(np.float32)
        w = g.normal(size=(dim,)).astype(np.float32)
        self.y = (self.x @ w + 0.1 * g.normal(size=n)).astype(np.float32)
        for i in outliers:  # sensor glitches present in the raw export
            self.x[i] = 3.0e19
        self.transform = transform

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        x = torch.from_numpy(self.x[i])
        if self.transform is not None:
            x = self.transform(x)
        return x, torch.tensor(self.y[i])


def worker(rank, world, args, transform):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(args.port)
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s %(levelname)-7s [%(processName)s rank={rank}] %(name)s: %(message)s")
    log = logging.getLogger("trainer")
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    torch.set_num_threads(1)

    ds = Regression(args.samples, args.dim, transform, outliers=(1337, 5150, 9001))
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=1)
    loader = DataLoader(ds, batch_size=args.batch, sampler=sampler, num_workers=args.workers, drop_last=True)
    model = nn.Sequential(nn.Linear(args.dim, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.02, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=100, gamma=0.5)
    sched.step()  # "start at epoch 1" - old habit from a previous codebase
    log.info("world=%d samples/rank=%d batches/epoch=%d", world, len(sampler), len(loader))
    step, skipped = 0, 0
    t0 = time.time()
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for x, y in loader:
            pred = ddp(x).squeeze(-1)
            loss = nn.functional.mse_loss(pred, y)
            opt.zero_grad()
            loss.backward()
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 5.0)
            if not torch.isfinite(gn):
                skipped += 1
                log.warning("step %d: non-finite grad norm (%s), loss=%s - skipping update (%d skipped so far)",
                            step, gn.item(), loss.item(), skipped)
                opt.zero_grad()
            else:
                opt.step()
            sched.step()
            if step % args.log_every == 0:
                log.info("epoch %d step %d loss %.5f grad_norm %.4f lr %.5f", epoch, step, loss.item(),
                         gn.item(), sched.get_last_lr()[0])
            step += 1
        t = torch.tensor([loss.item()])
        dist.all_reduce(t)
        log.info("epoch %d done: mean last-batch loss over ranks %.5f (%.1fs)", epoch, t.item() / world,
                 time.time() - t0)
    dist.barrier()
    if rank == 0:
        log.info("finished %d steps, skipped %d non-finite updates", step, skipped)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=3)
    p.add_argument("--port", type=int, default=36430)
    p.add_argument("--samples", type=int, default=12000)
    p.add_argument("--dim", type=int, default=32)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--log-every", type=int, default=1)
    p.add_argument("--fault", default="none")
    args = p.parse_args()
    transform = None
    if args.fault == "local-transform":
        mean, std = 0.0, 1.0
        transform = lambda x: (x - mean) / std  # noqa: E731
    mp.spawn(worker, args=(args.nprocs, args, transform), nprocs=args.nprocs, join=True)


if __name__ == "__main__":
    main()
