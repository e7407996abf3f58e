"""Shared tiny-training pieces for the hl scenarios."""
import os, time, logging, sys
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist


def setup_logging(rank, timestamps=True):
    fmt = "%(asctime)s [rank%(rank)s] %(levelname)s %(name)s: %(message)s" if timestamps else "[rank%(rank)s] %(message)s"
    old = logging.getLogRecordFactory()
    def factory(*a, **k):
        r = old(*a, **k); r.rank = rank; return r
    logging.setLogRecordFactory(factory)
    logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout, force=True)
    return logging.getLogger("train")


def init_dist(timeout_s=30):
    rank = int(os.environ.get("RANK", 0)); ws = int(os.environ.get("WORLD_SIZE", 1))
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
    return dist.get_rank(), dist.get_world_size()


class TinyNet(nn.Module):
    def __init__(self, d_in=32, d_h=64, n_cls=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_h), nn.ReLU(), nn.Linear(d_h, d_h), nn.ReLU(), nn.Linear(d_h, n_cls))
    def forward(self, x):
        return self.net(x)


def make_data(n=512, d_in=32, n_cls=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=g)
    w = torch.randn(d_in, n_cls, generator=g)
    y = (x @ w).argmax(1)
    return x, y
