import os, sys, time, logging, argparse, math
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

def get_logger(name="train", ts=True):
    rank = int(os.environ.get("RANK", "0"))
    fmt = ("%(asctime)s - %(levelname)s - %(name)s - [rank%(rank)s] %(message)s" if ts
           else "[rank%(rank)s] %(levelname)s %(message)s")
    logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout, force=True)
    old = logging.getLogRecordFactory()
    def factory(*a, **k):
        r = old(*a, **k); r.rank = os.environ.get("RANK", "0"); return r
    logging.setLogRecordFactory(factory)
    return logging.getLogger(name)

def init_dist(timeout=30):
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1

class MLP(nn.Module):
    def __init__(self, d_in=32, hidden=64, n_cls=10, bn=False, aux=False):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.bn = nn.BatchNorm1d(hidden) if bn else nn.Identity()
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_cls)
        self.aux_head = nn.Linear(hidden, 2) if aux else None
    def forward(self, x, use_aux=False):
        h = F.relu(self.bn(self.fc1(x)))
        h = F.relu(self.fc2(h))
        out = self.head(h)
        if use_aux and self.aux_head is not None:
            return out, self.aux_head(h)
        return out

def synth(n, d_in=32, n_cls=10, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    w = torch.randn(d_in, n_cls, generator=g)
    y = (x @ w).argmax(1)
    return x, y
