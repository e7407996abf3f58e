import os, sys, time, logging, argparse
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import TensorDataset, DataLoader, DistributedSampler

def setup(timeout=30):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1

def make_logger(rank, ts=True):
    fmt = ("%(asctime)s " if ts else "") + f"[rank{rank}] %(levelname)s %(name)s: %(message)s"
    logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout, force=True)
    return logging.getLogger("train")

class MLP(nn.Module):
    def __init__(self, d=16, h=32, c=4):
        super().__init__()
        self.fc1 = nn.Linear(d, h); self.act = nn.ReLU(); self.fc2 = nn.Linear(h, c)
    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))

def data(n=512, d=16, c=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, c, generator=g)
    y = (x @ w).argmax(1)
    return TensorDataset(x, y)

def loader(ds, rank, world, bs=32, **kw):
    s = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if world > 1 else None
    return DataLoader(ds, batch_size=bs, sampler=s, shuffle=(s is None), **kw)

def wrap(model, world, **kw):
    return DDP(model, **kw) if world > 1 else model

def cleanup(world):
    if world > 1 and dist.is_initialized():
        dist.destroy_process_group()
