"""Tiny DDP/single-process trainer reading local data files through a DataLoader.

Fault families (--fault): none, bad-json, bad-npy, ragged, seed-init, fifo, lambda-spawn,
empty-glob, fd-heavy, shm-big, skip-bad (healthy: skips corrupt lines), persist-noworkers.
"""
import argparse
import datetime
import glob
import json
import logging
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--bs", type=int, default=4)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--data-dir", default="data")
p.add_argument("--pattern", default="*.jsonl")
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--ctx", default=None)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--pylogging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--make-data", action="store_true")
args = p.parse_args()

if "RANK" in os.environ:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.pylogging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.pylogging:
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


VOCAB = "abcdefghijklmnopqrstuvwxyz .,"
SEQ = 32


def encode(text):
    ids = [VOCAB.index(c) + 1 if c in VOCAB else 0 for c in text.lower()]
    if len(ids) < SEQ:  # pad short lines; long lines are supposed to be cut upstream
        ids = ids + [0] * (SEQ - len(ids))
    return torch.tensor(ids, dtype=torch.long)


def sample_index(step, rank, world, bs, j=0):
    # DistributedSampler(shuffle=False) gives rank r the indices r, r+W, r+2W, ...
    return (step * bs + j) * world + rank


class JsonlText(Dataset):
    def __init__(self, files, skip_bad=False):
        self.lines = []
        for f in files:
            with open(f) as fh:
                self.lines += [(f, i + 1, l) for i, l in enumerate(fh)]
        self.skip_bad = skip_bad

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        f, ln, raw = self.lines[i]
        if self.skip_bad:
            try:
                rec = json.loads(raw)
            except json.JSONDecodeError as e:
                logging.getLogger("data").warning("skipping corrupt record %s:%d (%s)", f, ln, e)
                rec = {"text": "", "label": 0}
        else:
            rec = json.loads(raw)
        x = encode(rec["text"])
        return x, torch.tensor(rec["label"])


class NpyImages(Dataset):
    def __init__(self, root):
        self.files = sorted(glob.glob(os.path.join(root, "*.npy")))
        self.labels = json.load(open(os.path.join(root, "labels.json")))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        img = np.load(self.files[i])
        x = torch.from_numpy(img.astype(np.float32) / 255.0)
        return x, torch.tensor(self.labels[os.path.basename(self.files[i])])


class ManyTensors(Dataset):
    """Returns each sample as a list of small tensors (per-token features)."""
    def __len__(self):
        return 4096

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        feats = [torch.randn(8, generator=g) for _ in range(32)]
        return feats, torch.tensor(i % 4)


class BigFrames(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        return torch.randn(3, 256, 256), torch.tensor(i % 4)


def make_data():
    rng = np.random.default_rng(0)
    words = ["the", "model", "loss", "token", "batch", "rank", "grad", "step", "data", "shard"]
    os.makedirs("data/text", exist_ok=True)
    n = 400
    with open("data/text/train-00000.jsonl", "w") as fh:
        for i in range(n):
            t = " ".join(rng.choice(words, size=5))[:SEQ]
            fh.write(json.dumps({"id": i, "text": t, "label": int(i % 4)}) + "\n")
    os.makedirs("data/img", exist_ok=True)
    labels = {}
    for i in range(200):
        name = f"img_{i:05d}.npy"
        np.save(os.path.join("data/img", name), rng.integers(0, 255, size=(3, 16, 16), dtype=np.uint8))
        labels[name] = int(i % 4)
    json.dump(labels, open("data/img/labels.json", "w"))


if args.make_data:
    make_data()
    sys.exit(0)


def seed_worker(worker_id):
    # common recipe for reproducible numpy augmentation in workers
    worker_seed = torch.initial_seed()
    np.random.seed(worker_seed)


class Net(nn.Module):
    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        if kind == "text":
            self.emb = nn.Embedding(len(VOCAB) + 1, 32)
            self.head = nn.Linear(32, 4)
        elif kind == "img":
            self.head = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 64), nn.ReLU(), nn.Linear(64, 4))
        elif kind == "feats":
            self.head = nn.Linear(8, 4)
        else:
            self.head = nn.Sequential(nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(48, 4))

    def forward(self, x):
        if self.kind == "text":
            return self.head(self.emb(x).mean(1))
        if self.kind == "feats":
            return self.head(torch.stack(x, 1).mean(1))
        return self.head(x)


collate = None
kind = "text"
data_dir = os.path.join(args.data_dir, "text")
if args.fault in ("bad-npy",):
    kind = "img"
    ds = NpyImages(os.path.join(args.data_dir, "img"))
elif args.fault == "fd-heavy":
    kind = "feats"
    ds = ManyTensors()
elif args.fault == "shm-big":
    kind = "big"
    ds = BigFrames()
else:
    files = sorted(glob.glob(os.path.join(data_dir, args.pattern)))
    say(f"found {len(files)} shard(s) under {data_dir} matching {args.pattern}")
    ds = JsonlText(files, skip_bad=(args.fault == "skip-bad"))

if args.fault == "lambda-spawn":
    pad_id = 0
    collate = lambda batch: (torch.stack([b[0] for b in batch]).masked_fill(torch.stack([b[0] for b in batch]) == pad_id, 0),
                             torch.stack([b[1] for b in batch]))

if world > 1:
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    shuffle = None
else:
    sampler = None
    shuffle = True if args.fault == "empty-glob" else False

dl_kwargs = dict(batch_size=args.bs, sampler=sampler, shuffle=shuffle, num_workers=args.workers,
                 collate_fn=collate, timeout=args.dl_timeout)
if args.ctx:
    dl_kwargs["multiprocessing_context"] = args.ctx
if args.fault == "seed-init":
    dl_kwargs["worker_init_fn"] = seed_worker
if args.fault == "persist-noworkers":
    dl_kwargs["persistent_workers"] = True
if args.workers > 0:
    dl_kwargs["prefetch_factor"] = 2
if args.fault == "fd-heavy":
    torch.multiprocessing.set_sharing_strategy("file_descriptor")
    dl_kwargs["prefetch_factor"] = 8

model = Net(kind)
if world > 1:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
loader = DataLoader(ds, **dl_kwargs)
say(f"world={world} dataset={len(ds)} samples, {len(loader)} batches/epoch, workers={args.workers}")

it = range(args.steps)
pbar = None
if args.progress and rank == 0:
    from tqdm import tqdm
    pbar = tqdm(total=args.steps, desc="train", dynamic_ncols=False, ncols=90)

step = 0
t0 = time.time()
while step < args.steps:
    for x, y in loader:
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if pbar is not None:
            pbar.set_postfix(loss=f"{loss.item():.4f}")
            pbar.update(1)
        elif step % 2 == 0:
            say(f"step {step}/{args.steps} loss={loss.item():.4f} lr=1.0e-02 {(time.time()-t0)/step:.3f}s/it")
        if args.step_sleep:
            time.sleep(args.step_sleep)
        if step >= args.steps:
            break
if pbar is not None:
    pbar.close()
say(f"training done: {step} steps in {time.time()-t0:.1f}s, final loss {loss.item():.4f}")
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
