"""Per-rank file lists -> different number of batches per rank.
--mode {listdir,filter,sampler_len,ok}
  listdir:  each rank takes files[rank::ws] from a directory whose file count isn't divisible by ws
  filter:   each rank drops samples longer than max_len from its own shard (after sharding)
  sampler_len: DistributedSampler built from a per-rank dataset whose length differs (rank-local dedup)
  ok:       DistributedSampler on the full dataset (healthy)"""
import os, sys, argparse, time
import numpy as np, torch
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, DistributedSampler
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, MLP, wrap

p = argparse.ArgumentParser()
p.add_argument("--mode", default="ok")
p.add_argument("--data", default="/work/rr63/al/data/uneven")
p.add_argument("--files", type=int, default=9)
p.add_argument("--per-file", type=int, default=16)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--eval-metric", action="store_true")
a = p.parse_args()
rank, ws = setup(timeout=a.pg_timeout)
os.makedirs(a.data, exist_ok=True)
if rank == 0:
    rng = np.random.default_rng(0)
    for k in range(a.files):
        np.save(os.path.join(a.data, f"part{k:03d}.npy"), rng.standard_normal((a.per_file, 17)).astype(np.float32))
if ws > 1: dist.barrier()
files = sorted(os.path.join(a.data, f) for f in os.listdir(a.data))

class Rows(Dataset):
    def __init__(self, arrs):
        self.x = np.concatenate(arrs)
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        r = self.x[i]
        return torch.from_numpy(r[:16].copy()), int(abs(r[16]) * 4) % 4

if a.mode == "listdir":
    ds = Rows([np.load(f) for f in files[rank::ws]]); sampler = None
elif a.mode == "filter":
    ds = Rows([np.load(f) for f in files[rank::ws]])
    keep = np.abs(ds.x[:, 16]) < (1.9 if rank == 1 else 9)    # 'length' filter applied per shard
    ds.x = ds.x[keep]; sampler = None
elif a.mode == "sampler_len":
    ds = Rows([np.load(f) for f in files])
    if rank == 1:  # rank-local dedup of near-duplicate rows
        _, idx = np.unique(np.round(ds.x[:, :1], 1), axis=0, return_index=True)
        ds.x = ds.x[np.sort(idx)]
    sampler = DistributedSampler(ds, shuffle=True, drop_last=False)
else:
    ds = Rows([np.load(f) for f in files]); sampler = DistributedSampler(ds, shuffle=True)

dl = DataLoader(ds, batch_size=a.bs, sampler=sampler, num_workers=a.workers)
torch.manual_seed(0)
model = wrap(MLP(), ws)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
print(f"[rank{rank}] mode={a.mode} samples={len(ds)} batches/epoch={len(dl)}", flush=True)
step = 0
for ep in range(a.epochs):
    if sampler is not None:
        sampler.set_epoch(ep)
    tot = torch.zeros(2)
    for x, y in dl:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step(); step += 1
        tot += torch.tensor([loss.item() * len(y), len(y)])
        if step % 5 == 0:
            print(f"[rank{rank}] epoch {ep} step {step} loss {loss.item():.4f}", flush=True)
    dist.all_reduce(tot)
    print(f"[rank{rank}] epoch {ep} mean train loss {tot[0]/tot[1]:.4f}", flush=True)
if ws > 1: dist.barrier()
dist.destroy_process_group()
print(f"[rank{rank}] done", flush=True)
