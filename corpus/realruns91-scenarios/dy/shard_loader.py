#!/usr/bin/env python
"""Train a small 1-D conv classifier from per-sample .npy files with a multi-worker DataLoader.

Works as a plain single process or under torchrun (gloo, DistributedSampler).
--prepare writes the sample directory first; --damage selects a real data defect.
"""
import argparse
import glob
import logging
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

SEQ = 64


def prepare(root, n, damage):
    os.makedirs(root, exist_ok=True)
    for f in glob.glob(os.path.join(root, "*")):
        os.remove(f)
    rng = np.random.default_rng(0)
    for i in range(n):
        x = rng.standard_normal((4, SEQ)).astype(np.float32)
        if damage == "short" and i == 137:
            x = x[:, :SEQ - 5]  # one recording exported with a shorter window
        np.save(os.path.join(root, f"sample_{i:05d}.npy"), x)
        with open(os.path.join(root, f"sample_{i:05d}.label"), "w") as fh:
            fh.write(str(int(x[0].mean() > 0)))
    if damage == "truncate":
        p = os.path.join(root, "sample_00211.npy")
        data = open(p, "rb").read()
        open(p, "wb").write(data[: len(data) // 3])  # partial copy from the ingest job


class NpyDir(Dataset):
    def __init__(self, root, pattern="sample_*.npy", keep_open=False):
        self.files = sorted(glob.glob(os.path.join(root, pattern)))
        self.keep_open = keep_open
        self._handles = []

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        f = self.files[i]
        if self.keep_open:
            # memory-map the sample and keep the map around for "fast re-reads"
            fh = open(f, "rb")
            self._handles.append(fh)
            x = np.load(fh)
        else:
            x = np.load(f)
        y = int(open(f.replace(".npy", ".label")).read())
        return torch.from_numpy(np.ascontiguousarray(x)), y


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(4, 16, 5, padding=2)
        self.c2 = nn.Conv1d(16, 16, 5, padding=2)
        self.fc = nn.Linear(16, 2)

    def forward(self, x):
        h = F.relu(self.c1(x))
        h = F.relu(self.c2(h))
        return self.fc(h.mean(-1))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", default="/work/rr91/dy/run/samples")
    p.add_argument("--pattern", default="sample_*.npy")
    p.add_argument("--prepare", type=int, default=0)
    p.add_argument("--damage", default="none")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--bs", type=int, default=16)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--keep-open", action="store_true")
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--dl-timeout", type=float, default=0)
    args = p.parse_args()

    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format="%(asctime)s [%(levelname)s] %(name)s: %(message)s")
    log = logging.getLogger("shard_loader")

    distributed = "RANK" in os.environ
    rank, world = 0, 1
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
        rank, world = dist.get_rank(), dist.get_world_size()
    if args.prepare and rank == 0:
        prepare(args.data, args.prepare, args.damage)
        log.info(f"wrote {args.prepare} samples to {args.data}")
    if distributed:
        dist.barrier()

    ds = NpyDir(args.data, args.pattern, keep_open=args.keep_open)
    log.info(f"rank {rank}: dataset {args.data} pattern={args.pattern} -> {len(ds)} samples")
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
    dl = DataLoader(ds, batch_size=args.bs, shuffle=sampler is None, sampler=sampler,
                    num_workers=args.workers, persistent_workers=False,
                    timeout=args.dl_timeout)
    model = Net()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    step = 0
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        it = dl
        if args.tqdm:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {epoch}", disable=rank != 0)
        tot, n = 0.0, 0
        for x, y in it:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item(); n += 1; step += 1
            if step % 10 == 0 and not args.tqdm:
                log.info(f"rank {rank} epoch {epoch} step {step} loss {loss.item():.4f}")
            if args.sleep:
                time.sleep(args.sleep)
        log.info(f"rank {rank} epoch {epoch} done: mean loss {tot / max(n, 1):.4f} over {n} batches")
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    log.info("training complete")


if __name__ == "__main__":
    main()
