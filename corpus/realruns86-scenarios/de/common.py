import os, sys, time, argparse
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

def base_args(p=None):
    p = p or argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=8)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--out", default="/work/rr86/de/tmp/out")
    return p

def init_dist(timeout=40):
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1

class TinyNet(nn.Module):
    def __init__(self, d_in=32, d_h=64, n_cls=4):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(d_in, d_h), nn.ReLU(), nn.Linear(d_h, d_h), nn.ReLU(), nn.Linear(d_h, n_cls))
    def forward(self, x):
        return self.net(x)

def is_fault(args, rank, step=None):
    return args.fault != "none" and (args.fault_rank < 0 or args.fault_rank == rank) and (step is None or step == args.fault_step)
