"""Older-style DDP script written for `python -m torch.distributed.launch` (reads --local_rank from argv)."""
import argparse
from datetime import timedelta
import torch
import torch.distributed as dist
import torch.nn as nn

parser = argparse.ArgumentParser(description="legacy ddp trainer")
parser.add_argument("--local_rank", type=int, default=0)
parser.add_argument("--epochs", type=int, default=2)
parser.add_argument("--lr", type=float, default=0.01)
args = parser.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
model = nn.parallel.DistributedDataParallel(nn.Linear(10, 2))
opt = torch.optim.SGD(model.parameters(), lr=args.lr)
for epoch in range(args.epochs):
    for it in range(5):
        loss = model(torch.randn(8, 10)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    if dist.get_rank() == 0:
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
dist.destroy_process_group()
