"""Older training entry point written for `python -m torch.distributed.launch` (reads --local_rank)."""
import argparse
import os
from datetime import timedelta

import torch
import torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--local_rank", type=int, default=0)
parser.add_argument("--epochs", type=int, default=2)
args = parser.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
print(f"rank {dist.get_rank()} local_rank {args.local_rank} ready", flush=True)
model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
for ep in range(args.epochs):
    loss = model(torch.randn(16, 8)).pow(2).mean()
    loss.backward()
    print(f"epoch {ep} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
