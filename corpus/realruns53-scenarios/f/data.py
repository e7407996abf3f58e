"""Tiny training loop reading a local on-disk dataset (npy / jsonl / csv / pickle shards).

Data is prepared by --prepare; faults are introduced into the data files (truncation, bad rows,
variable length samples, ...) or into the loader configuration.
"""
import argparse
import csv
import glob
import json
import logging
import os
import pickle
import signal
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

p = argparse.ArgumentParser()
p.add_argument("--data", required=True)
p.add_argument("--fmt", default="npy")  # npy | jsonl | csv | pkl | seq
p.add_argument("--prepare", action="store_true")
p.add_argument("--corrupt", default="none")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--timeout", type=float, default=0)
p.add_argument("--kill-worker-at", type=int, default=-1)
p.add_argument("--kill-rank", type=int, default=1)
p.add_argument("--resume", default="")
p.add_argument("--save", default="")
p.add_argument("--ctx", default="")
p.add_argument("--logfmt", default="print")
p.add_argument("--pattern", default="*")
p.add_argument("--n", type=int, default=64)
p.add_argument("--bn", action="store_true")
args = p.parse_args()

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(name)s:%(lineno)d - %(message)s")
log = logging.getLogger("data_train")


def out(m):
    (log.info if args.logfmt == "logging" else (lambda s: print(s, flush=True)))(m)


D = 16


def prepare():
    os.makedirs(args.data, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(args.n):
        x = rng.standard_normal(D).astype(np.float32)
        y = int(rng.integers(0, 4))
        if args.fmt == "npy":
            np.save(os.path.join(args.data, f"sample_{i:05d}.npy"), np.concatenate([x, [y]]).astype(np.float32))
        elif args.fmt == "seq":
            L = int(rng.integers(8, 24))
            np.save(os.path.join(args.data, f"sample_{i:05d}.npy"), rng.integers(0, 100, L).astype(np.int64))
    if args.fmt == "jsonl":
        with open(os.path.join(args.data, "train.jsonl"), "w") as f:
            for i in range(args.n):
                f.write(json.dumps({"id": i, "x": rng.standard_normal(D).round(4).tolist(), "label": int(rng.integers(0, 4))}) + "\n")
    if args.fmt == "csv":
        with open(os.path.join(args.data, "train.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow([f"f{j}" for j in range(D)] + ["label"])
            for i in range(args.n):
                w.writerow([f"{v:.4f}" for v in rng.standard_normal(D)] + [int(rng.integers(0, 4))])
    if args.fmt == "pkl":
        for s in range(4):
            recs = [(rng.standard_normal(D).astype(np.float32), int(rng.integers(0, 4))) for _ in range(args.n // 4)]
            with open(os.path.join(args.data, f"shard_{s}.pkl"), "wb") as f:
                pickle.dump(recs, f)
    print(f"prepared {args.fmt} data in {args.data}")


if args.prepare:
    prepare()
    sys.exit(0)

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1


class NpyDir(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, args.pattern)))
        self.handles = []

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if args.corrupt == "leak_fds":
            fh = open(self.files[i], "rb")  # kept for "fast re-reads"
            self.handles.append(fh)
            a = np.load(fh)
            fh.seek(0)
        else:
            a = np.load(self.files[i])
        return torch.from_numpy(a[:-1]), int(a[-1])


class SeqDir(NpyDir):
    def __getitem__(self, i):
        a = np.load(self.files[i])
        return torch.from_numpy(a), int(a.sum() % 4)


class Jsonl(Dataset):
    def __init__(self, path):
        with open(os.path.join(path, "train.jsonl")) as f:
            self.rows = [json.loads(line) for line in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor(r["x"], dtype=torch.float32), r["label"]


class Csv(Dataset):
    def __init__(self, path):
        with open(os.path.join(path, "train.csv")) as f:
            self.rows = list(csv.reader(f))[1:]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor([float(v) for v in r[:-1]]), int(r[-1])


class Pkl(Dataset):
    def __init__(self, path):
        self.recs = []
        for fn in sorted(glob.glob(os.path.join(path, "shard_*.pkl"))):
            with open(fn, "rb") as f:
                self.recs += pickle.load(f)

    def __len__(self):
        return len(self.recs)

    def __getitem__(self, i):
        x, y = self.recs[i]
        return torch.from_numpy(x), y


class Fifo(Dataset):
    """Reads samples from a path that (on this node) is a named pipe / hung mount."""
    def __init__(self, path):
        self.path = path

    def __len__(self):
        return 64

    def __getitem__(self, i):
        with open(os.path.join(self.path, "stream.bin"), "rb") as f:
            b = f.read(4 * (D + 1))
        a = np.frombuffer(b, dtype=np.float32)
        return torch.from_numpy(a[:-1].copy()), int(a[-1])


ds = {"npy": NpyDir, "seq": SeqDir, "jsonl": Jsonl, "csv": Csv, "pkl": Pkl, "fifo": Fifo}[args.fmt](args.data)
out(f"[rank{rank}] dataset {type(ds).__name__} with {len(ds)} samples from {args.data}")

model = nn.Sequential(nn.Linear(D, 32), *( [nn.BatchNorm1d(32)] if args.bn else []), nn.ReLU(), nn.Linear(32, 4)) if args.fmt != "seq" else \
    nn.Sequential(nn.EmbeddingBag(100, 32), nn.Linear(32, 4))
if args.resume:
    ckpt = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(ckpt["model"])
    out(f"[rank{rank}] resumed from {args.resume} (epoch {ckpt['epoch']})")
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

sampler = DistributedSampler(ds, shuffle=True) if distributed else None
kw = {}
if args.ctx:
    kw["multiprocessing_context"] = args.ctx
collate = None
if args.corrupt == "lambda_collate":
    collate = lambda b: (torch.stack([x for x, _ in b]), torch.tensor([y for _, y in b]))  # noqa: E731
dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=(sampler is None), num_workers=args.workers,
                timeout=args.timeout, collate_fn=collate, **kw)

step = 0
for ep in range(args.epochs):
    if sampler is not None:
        sampler.set_epoch(ep)
    it = iter(dl)
    for xb, yb in it:
        if step == args.kill_worker_at and rank == args.kill_rank and dl.num_workers > 0:
            # stand-in for the kernel OOM killer picking one of this rank's loader workers
            os.kill(it._workers[0].pid, signal.SIGKILL)
        if args.fmt == "seq":
            logits = model[1](model[0](xb))
        else:
            logits = model(xb)
        loss = F.cross_entropy(logits, yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 2 == 0:
            out(f"[rank{rank}] epoch {ep} step {step} loss {loss.item():.4f}")
        step += 1
    if args.save and rank == 0:
        torch.save({"model": (model.module if distributed else model).state_dict(), "epoch": ep}, args.save)
        out(f"[rank{rank}] saved checkpoint {args.save}")

out(f"[rank{rank}] done, {step} steps")
if distributed:
    dist.barrier()
    dist.destroy_process_group()
