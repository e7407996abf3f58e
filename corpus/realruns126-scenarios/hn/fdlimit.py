"""Open-file scenarios. A token-shard dataset read from small files in data/shards (created if absent).
--fault none|handle-leak|many-tensors ; --sharing file_descriptor|file_system ; --workers N."""
import argparse, os, sys, glob, time
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import Dataset, DataLoader, DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--sharing", default=None)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--pieces", type=int, default=32, help="tensors per sample (multi-crop style)")
p.add_argument("--progress", action="store_true")
args = p.parse_args()

if args.sharing:
    mp.set_sharing_strategy(args.sharing)
dist_on = "RANK" in os.environ
if dist_on:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank() if dist_on else 0
world = dist.get_world_size() if dist_on else 1
here = os.path.dirname(os.path.abspath(__file__))
shard_dir = os.path.join(here, "..", "data", "shards")
if rank == 0 and not os.path.isdir(shard_dir):
    os.makedirs(shard_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(400):
        rng.integers(0, 1000, size=2048, dtype=np.int32).tofile(os.path.join(shard_dir, f"shard_{i:05d}.bin"))
if dist_on: dist.barrier()

class Shards(Dataset):
    def __init__(self, d):
        self.files = sorted(glob.glob(os.path.join(d, "*.bin")))
        self._open = {}
    def __len__(self): return len(self.files) * 4
    def _fh(self, i):
        f = self.files[i % len(self.files)]
        if args.fault == "handle-leak":
            # keep every shard open for "fast random access" (handles never closed)
            if f not in self._open:
                self._open[f] = open(f, "rb")
            return self._open[f]
        return open(f, "rb")
    def __getitem__(self, i):
        fh = self._fh(i)
        fh.seek((i // len(self.files)) * 2048)
        toks = torch.from_numpy(np.frombuffer(fh.read(2048), dtype=np.int32).astype(np.int64))
        if args.fault != "handle-leak":
            fh.close()
        if args.fault == "many-tensors":
            # multi-crop: return a list of small crops instead of one tensor
            return [toks[j * 16:(j + 1) * 16].clone() for j in range(args.pieces)], toks[-1] % 10
        return toks[:256], toks[-1] % 10

class Net(nn.Module):
    def __init__(s):
        super().__init__(); s.emb = nn.EmbeddingBag(1000, 64); s.head = nn.Linear(64, 10)
    def forward(s, x): return s.head(s.emb(x))

import resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
if soft < 4096:
    print(f"[rank {rank}] WARNING: RLIMIT_NOFILE soft limit is {soft} (hard {hard}); DataLoader workers with the "
          f"'{mp.get_sharing_strategy()}' strategy may run out of file descriptors", file=sys.stderr, flush=True)
ds = Shards(shard_dir)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if dist_on else None
dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=sampler is None, num_workers=args.workers)
model = Net()
if dist_on: model = DDP(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(f"[rank {rank}] {len(ds)} samples in {len(ds.files)} shards, workers={args.workers}, sharing={mp.get_sharing_strategy()}", flush=True)
step = 0
it = dl
if args.progress and rank == 0:
    from tqdm import tqdm
    it = tqdm(dl, desc="train", mininterval=0.5)
for x, y in it:
    if isinstance(x, list): x = torch.cat(x, 1)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step(); step += 1
    if step % 10 == 0 and not (args.progress and rank == 0):
        print(f"[rank {rank}] step {step} loss {loss.item():.4f} open_fds={len(os.listdir('/proc/self/fd'))}", flush=True)
    if step >= args.steps: break
print(f"[rank {rank}] finished {step} steps", flush=True)
if dist_on: dist.destroy_process_group()
