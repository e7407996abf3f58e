"""DDP (torch.multiprocessing.spawn) classifier with OneCycleLR.

steps_per_epoch is computed as len(dataset) // (batch_size * world_size); the DistributedSampler
rounds up and the DataLoader keeps the last partial batch (drop_last=False).
"""
import argparse
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=1000)
p.add_argument("--bs", type=int, default=64)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", type=int, default=47385)
args = p.parse_args()


def main(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    X = torch.randn(args.n, 20)
    y = (X[:, :5].sum(1) > 0).long()
    ds = TensorDataset(X, y)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    steps_per_epoch = len(ds) // (args.bs * world)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, epochs=args.epochs,
                                                steps_per_epoch=steps_per_epoch)
    if rank == 0:
        print(f"world={world} batches/epoch/rank={len(dl)} steps_per_epoch(sched)={steps_per_epoch} "
              f"total_steps={sched.total_steps}", flush=True)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        tot, n = 0.0, 0
        for xb, yb in dl:
            loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            tot += loss.item(); n += 1
        print(f"rank {rank} epoch {epoch} mean_loss {tot/n:.4f} lr {sched.get_last_lr()[0]:.2e}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(main, args=(args.world,), nprocs=args.world)
