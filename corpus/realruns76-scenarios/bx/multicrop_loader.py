"""DDP training where each sample is a list of many small crops (multi-crop augmentation), loaded by
DataLoader workers; tensors cross process boundaries via the default file_descriptor sharing strategy."""
import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("--crops", type=int, default=64)
ap.add_argument("--workers", type=int, default=2)
ap.add_argument("--batch-size", type=int, default=16)
ap.add_argument("--steps", type=int, default=30)
args = ap.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank()


class MultiCrop(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        base = torch.randn(3, 32, 32, generator=g)
        crops = [base[:, j % 16:j % 16 + 16, (j * 7) % 16:(j * 7) % 16 + 16].clone() for j in range(args.crops)]
        return crops, i % 10


model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 16 * 16, 64), nn.ReLU(), nn.Linear(64, 10))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
dl = DataLoader(MultiCrop(), batch_size=args.batch_size, num_workers=args.workers, shuffle=True)
print(f"rank {rank}: sharing strategy {torch.multiprocessing.get_sharing_strategy()}, crops/sample {args.crops}")
for step, (crops, y) in enumerate(dl):
    x = torch.stack(crops, 1).mean(1)
    loss = F.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 0 and step % 5 == 0:
        print(f"step {step} loss {loss.item():.4f}")
    if step + 1 >= args.steps:
        break
if rank == 0:
    print("done")
dist.destroy_process_group()
