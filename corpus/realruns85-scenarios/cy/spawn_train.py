"""Tiny DDP trainer started with torch.multiprocessing.spawn (hand-set MASTER_ADDR/MASTER_PORT).

--fault: none | lambda-collate (unpicklable collate_fn handed to the workers) | port-taken (MASTER_PORT given
by the user is whatever the env says) | nprocs-mismatch (spawns fewer processes than --world-size)
"""
import argparse
import os
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

try:
    from tqdm import tqdm
except ImportError:  # pragma: no cover
    tqdm = None


def worker(rank, world_size, args, collate_fn):
    dist.init_process_group("gloo", rank=rank, world_size=world_size,
                            timeout=timedelta(seconds=args.timeout))
    if rank == 0:
        print(f"process group up: {world_size} ranks via "
              f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    g = torch.Generator().manual_seed(7)
    x = torch.randn(512, 16, generator=g)
    y = (x[:, :1] * 0.7 - x[:, 1:2] * 0.3)
    ds = TensorDataset(x, y)
    sampler = DistributedSampler(ds, num_replicas=world_size, rank=rank)
    dl = DataLoader(ds, batch_size=32, sampler=sampler, collate_fn=collate_fn)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        it = dl
        if rank == 0 and tqdm is not None and args.tqdm:
            it = tqdm(dl, desc=f"epoch {epoch}", ncols=80, mininterval=0.5)
        for xb, yb in it:
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            time.sleep(args.sleep)
        t = loss.detach().clone()
        dist.all_reduce(t)
        if rank == 0:
            print(f"epoch {epoch} mean loss {t.item() / world_size:.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def default_collate_pairs(batch):
    xs, ys = zip(*batch)
    return torch.stack(xs), torch.stack(ys)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--world-size", type=int, default=None)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--sleep", type=float, default=0.02)
    p.add_argument("--fault", default="none")
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--noisy", action="store_true")
    args = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "37470")
    world_size = args.world_size or args.nprocs
    collate = default_collate_pairs
    if args.fault == "lambda-collate":
        scale = 1.0
        collate = lambda batch: tuple(torch.stack(t) * scale for t in zip(*batch))  # noqa: E731
    if args.noisy:
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
                      "will be the only storage class.", UserWarning)
    print(f"spawning {args.nprocs} workers (world_size={world_size})", flush=True)
    mp.spawn(worker, args=(world_size, args, collate), nprocs=args.nprocs, join=True)
    print("training finished", flush=True)


if __name__ == "__main__":
    main()
