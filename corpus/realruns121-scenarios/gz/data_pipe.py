"""Tiny sequence classifier fed from on-disk shards (npy token files) through a DataLoader.

--data-dir points at a folder of shard_*.npy files (make them with --make-data).
Faults come from the data / loader configuration, selected with --case.
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

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="work/data/train")
p.add_argument("--pattern", default="shard_*.npy")
p.add_argument("--make-data", type=int, default=0)
p.add_argument("--seq-len", type=int, default=32)
p.add_argument("--var-len", action="store_true")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--mp-context", default=None)
p.add_argument("--loader-timeout", type=float, default=0)
p.add_argument("--keep-open", action="store_true")
p.add_argument("--augment", default="none")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--pg-timeout", type=int, default=20)
p.add_argument("--stream", default="")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout)
log = logging.getLogger("data_pipe")


def make_data(n):
    os.makedirs(args.data_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        L = int(rng.integers(20, 48)) if args.var_len else args.seq_len
        toks = rng.integers(0, 500, size=(L,), dtype=np.int64)
        np.save(os.path.join(args.data_dir, f"shard_{i:05d}.npy"), toks)
    log.info("wrote %d shards to %s", n, args.data_dir)


class ShardDataset(Dataset):
    def __init__(self, root, pattern, transform=None):
        self.files = sorted(glob.glob(os.path.join(root, pattern)))
        self.transform = transform
        self.handles = []
        if args.keep_open:
            # memory-map every shard once up front so workers can slice them cheaply
            for f in self.files:
                self.handles.append(open(f, "rb"))
        if args.stream:
            self.stream = args.stream

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if args.stream and i % 7 == 3:
            with open(self.stream, "rb") as f:  # remote shard cache (named pipe)
                f.read(1)
        if self.handles:
            fh = self.handles[i]
            fh.seek(0)
            toks = np.load(fh)
        else:
            toks = np.load(self.files[i])
        x = torch.from_numpy(toks)
        if self.transform is not None:
            x = self.transform(x)
        y = int(toks.sum() % 4)
        return x, y


class Model(nn.Module):
    def __init__(self, vocab=512, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, 4)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h[:, -1])


def main():
    if args.make_data:
        make_data(args.make_data)
        return
    distributed = "RANK" in os.environ
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(0)

    transform = None
    if args.augment == "mask":
        mask_id = 1
        transform = lambda t: torch.where(torch.rand(t.shape) < 0.1, torch.full_like(t, mask_id), t)

    ds = ShardDataset(args.data_dir, args.pattern, transform)
    log.info("rank %d: %d shards found under %s (%s)", rank, len(ds), args.data_dir, args.pattern)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if distributed else None
    loader = DataLoader(ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None,
                        num_workers=args.workers, multiprocessing_context=args.mp_context,
                        timeout=args.loader_timeout, persistent_workers=False)
    model = Model()
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    step = 0
    t0 = time.time()
    for epoch in range(args.epochs):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in loader:
            logits = model(x)
            loss = F.cross_entropy(logits, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if rank == 0 and step % 5 == 0:
                log.info("epoch %d step %d loss %.4f (%.2f it/s)", epoch, step, loss.item(), step / (time.time() - t0))
    log.info("rank %d done after %d steps", rank, step)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
