"""Notebook-turned-script: image-ish classifier trained with torch.multiprocessing.spawn + DDP (gloo).

--fault none | no_guard | lambda_collate | fifo_shard | kill_worker | empty_glob | pred_dump
"""
import argparse
import glob
import json
import os
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--world", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--data", default="/work/rr70/bf/data/patches")
p.add_argument("--port", default="31830")
p.add_argument("--out", default="/work/rr70/bf/runs/spawn")
args = p.parse_args()


class Patches(Dataset):
    def __init__(self, root, pattern="*.npz", fifo=None):
        self.files = sorted(glob.glob(os.path.join(root, pattern)))
        self.fifo = fifo

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if self.fifo is not None and i == len(self.files) - 1:
            # last shard is "streamed" from the ingest job through a named pipe
            with open(self.fifo, "rb") as f:
                raw = f.read()
        z = np.load(self.files[i])
        x = torch.from_numpy(z["x"]).float() / 255.0
        return x, int(z["y"])


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(1, 8, 3, padding=1)
        self.c2 = nn.Conv2d(8, 16, 3, padding=1)
        self.fc = nn.Linear(16 * 4 * 4, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2)
        x = F.max_pool2d(F.relu(self.c2(x)), 2)
        return self.fc(x.flatten(1))


def make_data(root, n=128):
    if glob.glob(os.path.join(root, "*.npz")):
        return
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(1)
    for i in range(n):
        y = int(rng.integers(0, 10))
        x = rng.integers(0, 255, size=(1, 16, 16), dtype=np.uint8)
        x[0, y, :] = 255
        np.savez(os.path.join(root, f"patch_{i:04d}.npz"), x=x, y=y)


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = args.port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    print(f"[{time.strftime('%H:%M:%S')}] rank {rank}/{world} up, pid {os.getpid()}", flush=True)
    pattern = "*.npz"
    if args.fault == "empty_glob":
        pattern = "*.npy"  # data was re-exported as .npz last week
    fifo = None
    if args.fault == "fifo_shard" and rank == args.fault_rank:
        fifo = os.path.join(args.data, "..", "ingest.pipe")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
    ds = Patches(args.data, pattern, fifo=fifo)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False) if args.fault != "empty_glob" else None
    dl_kw = dict(batch_size=16, num_workers=args.workers)
    if args.fault == "fifo_shard":
        dl_kw["timeout"] = 10
    if args.fault == "lambda_collate":
        dl_kw["multiprocessing_context"] = "spawn"
        dl_kw["collate_fn"] = lambda b: (torch.stack([x for x, _ in b]), torch.tensor([y for _, y in b]))
    dl = DataLoader(ds, sampler=sampler, shuffle=sampler is None, **dl_kw)
    model = nn.parallel.DistributedDataParallel(Net())
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    if args.fault == "none":
        sched.step()  # notebook stepped the scheduler once "to initialise" it
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        tot, n = 0.0, 0
        for i, (x, y) in enumerate(dl):
            if args.fault == "kill_worker" and rank == args.fault_rank and ep == 1 and i == 0:
                print(f"[{time.strftime('%H:%M:%S')}] rank {rank} epoch {ep}: workers busy", flush=True)
                time.sleep(4)
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(y)
            n += len(y)
        sched.step()
        print(f"[{time.strftime('%H:%M:%S')}] rank {rank} epoch {ep} train_loss {tot / max(n, 1):.4f} lr {sched.get_last_lr()[0]:.4g}", flush=True)
    if args.fault == "pred_dump" and rank == args.fault_rank:
        os.makedirs(args.out, exist_ok=True)
        path = os.path.join(args.out, "val_logits.jsonl")
        print(f"[{time.strftime('%H:%M:%S')}] rank {rank} writing per-sample logits to {path}", flush=True)
        with torch.no_grad(), open(path, "w") as f:
            for rep in range(200):
                for x, y in dl:
                    for row, t in zip(model.module(x).tolist(), y.tolist()):
                        f.write(json.dumps({"rep": rep, "y": t, "logits": row}) + "\n")
    dist.barrier()
    print(f"[{time.strftime('%H:%M:%S')}] rank {rank} finished", flush=True)
    dist.destroy_process_group()


def run():
    make_data(args.data)
    print(f"launching {args.world} processes with mp.spawn (fault={args.fault})", flush=True)
    mp.spawn(worker, args=(args.world,), nprocs=args.world, join=True)


if args.fault == "no_guard":
    # pasted straight from the notebook cell
    run()
elif __name__ == "__main__":
    run()
