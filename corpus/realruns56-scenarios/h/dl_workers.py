"""Training with a DataLoader reading sample shards from disk, optionally under DDP (env:// launch).

Faults (induced for real):
  worker_segv   a native decoder (ctypes) dereferences NULL on one bad record inside a worker
  worker_marker worker writes its pid to a marker file at a given sample so a shell can kill it
  worker_stall  worker blocks on a lock file forever (DataLoader(timeout=...) fires)
  fd_leak       dataset opens each shard with open() and never closes it (run under `ulimit -n`)
  corrupt_skip  some records are truncated; dataset catches the decode error, logs it and skips (healthy)
"""
import argparse
import ctypes
import logging
import os
import struct
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="/work/rr56/h/tmp/shards")
p.add_argument("--num-records", dest="n", type=int, default=4096)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--fault", default="none",
               choices=["none", "worker_segv", "worker_marker", "worker_stall", "fd_leak", "corrupt_skip"])
p.add_argument("--keep-batches", action="store_true", help="bug: keep every batch for an epoch-end eval")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-index", type=int, default=3000)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--marker-dir", default="/work/rr56/h/tmp")
p.add_argument("--fmt", choices=["pipe", "tqdm", "logging"], default="pipe")
args = p.parse_args()

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
if args.fmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}] %(message)s")
log = logging.getLogger("dl")


def out(m):
    if args.fmt == "logging":
        log.info(m)
    else:
        print(m, flush=True)


def make_shards():
    os.makedirs(args.data_dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    for i in range(args.n):
        path = os.path.join(args.data_dir, f"rec_{i:06d}.bin")
        if os.path.exists(path):
            continue
        x = torch.randn(32, generator=g)
        y = float(x[:4].sum())
        payload = struct.pack("<33f", *x.tolist(), y)
        if args.fault == "corrupt_skip" and i % 997 == 13:
            payload = payload[:57]  # truncated record
        with open(path, "wb") as f:
            f.write(struct.pack("<I", len(payload)) + payload)


class ShardDataset(Dataset):
    def __init__(self, root, n):
        self.root, self.n = root, n
        self._open = []

    def __len__(self):
        return self.n

    def _read(self, i):
        path = os.path.join(self.root, f"rec_{i:06d}.bin")
        if args.fault == "fd_leak":
            f = open(path, "rb")  # bug: handle kept alive in a cache and never closed
            self._open.append(f)
            raw = f.read()
        else:
            with open(path, "rb") as f:
                raw = f.read()
        (ln,) = struct.unpack("<I", raw[:4])
        vals = struct.unpack("<33f", raw[4:4 + ln])
        return vals

    def __getitem__(self, i):
        if rank == args.fault_rank and i == args.fault_index:
            if args.fault == "worker_segv":
                # native record decoder hit a NULL buffer pointer
                ctypes.memmove(ctypes.c_void_p(0), b"\x00" * 8, 8)
            elif args.fault == "worker_marker":
                os.makedirs(args.marker_dir, exist_ok=True)
                with open(os.path.join(args.marker_dir, f"dlworker.rank{rank}"), "w") as f:
                    f.write(str(os.getpid()))
                time.sleep(60)
            elif args.fault == "worker_stall":
                lock = os.path.join(args.data_dir, ".index.lock")
                open(lock, "a").close()
                while os.path.exists(lock):
                    time.sleep(0.5)
        if args.fault == "corrupt_skip":
            try:
                vals = self._read(i)
            except struct.error as e:
                log.warning("skipping corrupt record %d (%s): %s", i, f"rec_{i:06d}.bin", e)
                vals = self._read((i + 1) % self.n)
        else:
            vals = self._read(i)
        t = torch.tensor(vals)
        return t[:32], t[32:]


if __name__ == "__main__":
    torch.manual_seed(0)
    torch.set_num_threads(1)
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    if rank == 0:
        make_shards()
    if distributed:
        dist.barrier()
    ds = ShardDataset(args.data_dir, args.n)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False) if distributed else None
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=False, num_workers=args.workers,
                    timeout=args.dl_timeout, persistent_workers=args.workers > 0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 1))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    out(f"dataset={len(ds)} records, world={world}, workers={args.workers}, batches/epoch={len(dl)}")
    step = 0
    for ep in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(ep)
        it = dl
        if args.fmt == "tqdm":
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", ncols=100, mininterval=0.05)
        kept = []
        for x, y in it:
            if args.keep_batches:
                kept.append((x, y))
            loss = nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if args.fmt == "tqdm":
                it.set_postfix(loss=f"{loss.item():.4f}")
            else:
                out(f"epoch {ep} | step {step} | loss {loss.item():.4f} | lr 1.000e-02")
    out(f"done: {step} steps")
    if distributed:
        dist.destroy_process_group()
