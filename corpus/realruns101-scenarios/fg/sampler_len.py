"""Class-balanced distributed sampler + OneCycleLR sized from len(dataloader)."""
import argparse, os, math
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.utils.data import Dataset, DataLoader, Sampler

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--len-mode", default="ceil")   # ceil: n/world (buggy), exact: count own indices
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
dist.init_process_group("gloo", timeout=timedelta(seconds=30))

class DS(Dataset):
    def __init__(self, n=600):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 20, generator=g)
        self.y = torch.tensor([0] * 380 + [1] * 220)  # imbalanced classes
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], self.y[i]

class ClassShardSampler(Sampler):
    """Each rank gets whole classes (keeps per-class BN stats local)."""
    def __init__(self, ds, rank, world):
        self.idx = [i for i in range(len(ds)) if int(ds.y[i]) % world == rank]
        self.n = len(ds)
        self.world = world
    def __iter__(self):
        g = torch.Generator().manual_seed(self.epoch if hasattr(self, "epoch") else 0)
        return iter([self.idx[j] for j in torch.randperm(len(self.idx), generator=g)])
    def __len__(self):
        return math.ceil(self.n / self.world) if args.len_mode == "ceil" else len(self.idx)
    def set_epoch(self, e): self.epoch = e

ds = DS(); smp = ClassShardSampler(ds, rank, world)
dl = DataLoader(ds, batch_size=args.bs, sampler=smp)
model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 2)))
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.5, total_steps=args.epochs * len(dl))
print(f"[rank{rank}] len(sampler)={len(smp)} len(dataloader)={len(dl)} total_steps={args.epochs * len(dl)}", flush=True)
step = 0
for ep in range(args.epochs):
    smp.set_epoch(ep)
    for x, y in dl:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step(); sched.step(); step += 1
        if step % 5 == 0: print(f"[rank{rank}] ep {ep} step {step} lr {sched.get_last_lr()[0]:.4f} loss {loss.item():.4f}", flush=True)
print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
