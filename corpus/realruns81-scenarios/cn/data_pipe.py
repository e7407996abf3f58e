#!/usr/bin/env python
"""Trainer reading .npy feature files through a multi-worker DataLoader (torchrun or single process)."""
import argparse, glob, logging, os, sys, time
from datetime import timedelta
import numpy as np
import torch, torch.distributed as dist, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
from torch.utils.data.distributed import DistributedSampler


class NpyDir(Dataset):
    def __init__(self, pattern):
        self.files = sorted(glob.glob(pattern))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        arr = np.load(self.files[i])
        return torch.from_numpy(arr[:-1]).float(), torch.tensor(int(arr[-1]) % 4)


def make(d, n, corrupt):
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        p = os.path.join(d, f"sample_{i:04d}.npy")
        np.save(p, np.append(rng.standard_normal(24), i).astype(np.float32))
        if i in corrupt:   # partially copied file (rsync interrupted)
            data = open(p, "rb").read()
            open(p, "wb").write(data[: len(data) // 2])
    print(f"wrote {n} samples to {d} ({len(corrupt)} truncated)")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data", required=False)
    p.add_argument("--make", default=None)
    p.add_argument("--n", type=int, default=256)
    p.add_argument("--corrupt", default="")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    a = p.parse_args()
    if a.make:
        make(a.make, a.n, {int(x) for x in a.corrupt.split(",") if x}); return
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank() if distributed else 0
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [%(levelname)s] rank={rank} %(message)s")
    log = logging.getLogger("data_pipe")
    ds = NpyDir(a.data)
    log.info("dataset %s: %d files", a.data, len(ds))
    sampler = DistributedSampler(ds, shuffle=True, seed=0) if distributed else None
    dl = DataLoader(ds, batch_size=a.batch_size, sampler=sampler, shuffle=(sampler is None),
                    num_workers=a.workers, persistent_workers=False)
    model = nn.Sequential(nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 4))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for ep in range(a.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        tot, n = 0.0, 0
        for i, (x, y) in enumerate(dl):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item(); n += 1
            if i % 4 == 0:
                log.info("epoch %d iter %d loss %.4f", ep, i, loss.item())
        log.info("epoch %d done, mean loss %.4f", ep, tot / max(n, 1))
    log.info("finished")
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
