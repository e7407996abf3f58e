"""Token-classification style trainer reading sharded .jsonl files; data-pipeline faults.

Launch: plain python (single process) or --spawn N (torch.multiprocessing.spawn, gloo DDP).
--fault: none, ragged (no padding collate), worker_keyerror, many_shards (keeps shard handles open),
         empty_filter, lambda_spawn (lambda collate with spawn workers)
"""
import argparse
import json
import os
import random
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=42770)
p.add_argument("--data", default="scratch/shards")
p.add_argument("--n-shards", type=int, default=8)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--steps", type=int, default=30)
p.add_argument("--min-len", type=int, default=16)
args = p.parse_args()

VOCAB = 500


def write_shards(root, n_shards, per_shard=64, seed=0):
    os.makedirs(root, exist_ok=True)
    rng = random.Random(seed)
    for s in range(n_shards):
        path = os.path.join(root, f"shard-{s:05d}.jsonl")
        if os.path.exists(path):
            continue
        with open(path, "w") as f:
            for i in range(per_shard):
                L = 32 if args.fault != "ragged" else rng.randint(20, 40)
                ids = [rng.randrange(VOCAB) for _ in range(L)]
                rec = {"id": f"{s}-{i}", "input_ids": ids, "labels": [t % 7 for t in ids],
                       "quality": rng.random()}
                if s == 3 and i == 17 and args.fault == "worker_keyerror":
                    rec.pop("labels")  # one record from the older export format
                    rec["tags"] = [t % 7 for t in ids]
                f.write(json.dumps(rec) + "\n")


class ShardDataset(Dataset):
    def __init__(self, root, keep_open=False, min_quality=0.0, min_len=16):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".jsonl"))
        self.index = []
        self.handles = []
        for fi, path in enumerate(self.files):
            fh = open(path)
            offs = []
            pos = fh.tell()
            line = fh.readline()
            while line:
                offs.append(pos)
                pos = fh.tell()
                line = fh.readline()
            for o in offs:
                self.index.append((fi, o))
            if keep_open:
                self.handles.append(fh)  # cached for fast random access
            else:
                fh.close()
        self.keep_open = keep_open
        if min_quality > 0 or min_len > 16:
            self.index = [ix for ix in self.index if self._rec(ix)["quality"] >= min_quality
                          and len(self._rec(ix)["input_ids"]) >= min_len]

    def _rec(self, ix):
        fi, off = ix
        if self.keep_open:
            fh = self.handles[fi]
            fh.seek(off)
            return json.loads(fh.readline())
        with open(self.files[fi]) as fh:
            fh.seek(off)
            return json.loads(fh.readline())

    def __len__(self):
        return len(self.index)

    def __getitem__(self, i):
        rec = self._rec(self.index[i])
        return torch.tensor(rec["input_ids"]), torch.tensor(rec["labels"])


class Tagger(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 64)
        self.rnn = nn.GRU(64, 64, batch_first=True)
        self.out = nn.Linear(64, 7)

    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.out(h)


def run(rank, world):
    if world > 1:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    root = args.data
    ds = ShardDataset(root, keep_open=args.fault == "many_shards",
                      min_quality=0.999 if args.fault == "empty_filter" else 0.0, min_len=args.min_len)
    print(f"[rank {rank}] {len(ds.files)} shards, {len(ds)} records", flush=True)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
    kw = {}
    if args.fault == "lambda_spawn":
        kw["collate_fn"] = lambda batch: (torch.stack([b[0] for b in batch]), torch.stack([b[1] for b in batch]))
        kw["multiprocessing_context"] = "spawn"
    dl = DataLoader(ds, batch_size=16, sampler=sampler, shuffle=sampler is None, num_workers=args.workers,
                    persistent_workers=False, **kw)
    model = Tagger()
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=2e-3)
    step, t0 = 0, time.time()
    for epoch in range(100):
        if sampler is not None:
            sampler.set_epoch(epoch)
        for x, y in dl:
            logits = model(x)
            loss = F.cross_entropy(logits.reshape(-1, 7), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            step += 1
            if step % 5 == 0:
                print(f"[rank {rank}] epoch {epoch} step {step}/{args.steps} loss {loss.item():.4f} "
                      f"{(time.time()-t0)/step:.3f}s/it", flush=True)
            if step >= args.steps:
                break
        if step >= args.steps:
            break
    print(f"[rank {rank}] finished {step} steps", flush=True)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


if __name__ == "__main__":
    write_shards(args.data, args.n_shards)
    if args.spawn:
        mp.spawn(run, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        run(0, 1)
