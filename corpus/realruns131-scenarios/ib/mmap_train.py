"""DDP trainer reading token shards through np.memmap (the usual pre-tokenized .bin layout).
If the shard file is rewritten/truncated by another job while training maps it, touching the
now-missing pages raises SIGBUS in the reading rank.

--prep writes the shards; --shard-dir chooses where.
"""
import argparse
import os
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--shard-dir", default="/tmp/rr131ib_shards")
p.add_argument("--prep", action="store_true")
p.add_argument("--steps", type=int, default=200)
p.add_argument("--step-sleep", type=float, default=0.1)
p.add_argument("--seq", type=int, default=64)
p.add_argument("--batch", type=int, default=8)
args = p.parse_args()

if args.prep:
    os.makedirs(args.shard_dir, exist_ok=True)
    for r in range(2):
        arr = np.random.default_rng(r).integers(0, 1000, size=8 * 1024 * 1024, dtype=np.uint16)
        arr.tofile(os.path.join(args.shard_dir, f"train_{r:03d}.bin"))
    print("wrote shards", flush=True)
    raise SystemExit(0)

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
path = os.path.join(args.shard_dir, f"train_{rank:03d}.bin")
data = np.memmap(path, dtype=np.uint16, mode="r")
print(f"[rank{rank}] mapped {path}: {len(data):,} tokens", flush=True)

torch.manual_seed(0)
model = nn.Sequential(nn.Embedding(1000, 64), nn.Linear(64, 1000))
ddp = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
rng = np.random.default_rng(rank)
# sequential read position walks forward through the shard (like a streaming loader)
pos = 0
t0 = time.time()
for step in range(1, args.steps + 1):
    idx = pos + np.arange(args.batch)[:, None] * args.seq + np.arange(args.seq + 1)[None, :]
    pos += args.batch * args.seq * 97
    chunk = torch.from_numpy(data[idx % len(data)].astype(np.int64))
    x, y = chunk[:, :-1], chunk[:, 1:]
    loss = nn.functional.cross_entropy(ddp(x).reshape(-1, 1000), y.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[rank{rank}] step {step} tokens_read={pos:,} loss={loss.item():.4f} "
              f"t={time.time()-t0:.1f}s", flush=True)
    time.sleep(args.step_sleep)
dist.barrier()
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
