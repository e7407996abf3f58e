"""torch.multiprocessing.spawn launcher; DataLoader workers use the spawn start method.
--entry guard : normal `if __name__ == "__main__":` entry
--entry bare  : launch code at module level (the script as first written, no main guard)"""
import argparse, os, sys, time, warnings
from datetime import timedelta
import numpy as np, torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--entry", default="guard")
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", default="46675")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--fd-strategy", default=None)
a = p.parse_args()

def build_data():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 20, generator=g)
    y = (x[:, :3].sum(1) > 0).long()
    return TensorDataset(x, y)

def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = a.port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    ds = build_data()
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=a.workers,
                    multiprocessing_context="spawn", pin_memory=True, persistent_workers=a.workers > 0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=a.epochs * len(dl))
    for ep in range(a.epochs):
        sampler.set_epoch(ep)
        tot, n = 0.0, 0
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); sched.step()
            tot += loss.item(); n += 1
        print(f"[rank {rank}] epoch {ep} train_loss={tot / n:.4f} lr={sched.get_last_lr()[0]:.5f} batches={n}", flush=True)
    dist.barrier()
    if rank == 0:
        print("training complete", flush=True)
    dist.destroy_process_group()

def launch():
    print(f"spawning {a.nprocs} ranks (pid {os.getpid()})", flush=True)
    mp.spawn(worker, args=(a.nprocs,), nprocs=a.nprocs, join=True)

if a.entry == "bare":
    launch()
elif __name__ == "__main__":
    launch()
