import os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

def setup(timeout=40, port=None):
    if "RANK" not in os.environ:
        return 0, 1
    dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    return dist.get_rank(), dist.get_world_size()

class MLP(nn.Module):
    def __init__(self, d=16, h=32, c=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d, h), nn.ReLU(), nn.Linear(h, c))
    def forward(self, x):
        return self.net(x)

def wrap(model, ws):
    if ws > 1:
        from torch.nn.parallel import DistributedDataParallel as DDP
        return DDP(model)
    return model
