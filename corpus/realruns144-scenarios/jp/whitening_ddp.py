"""DDP model with a batch-whitening (Cholesky/ZCA-style) input layer.

Each rank whitens its own batch with the Cholesky factor of the batch covariance.
--dead-feature-rank R : on rank R, sensor column 7 is constant in the shard (stuck sensor)
"""
import argparse
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--dead-feature-rank", type=int, default=-1)
p.add_argument("--dead-from-step", type=int, default=25)
p.add_argument("--steps", type=int, default=60)
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()


class BatchWhiten(nn.Module):
    def forward(self, x):
        xc = x - x.mean(0, keepdim=True)
        cov = xc.T @ xc / (x.shape[0] - 1)
        L = torch.linalg.cholesky(cov)
        return torch.linalg.solve_triangular(L, xc.T, upper=False).T


torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(
    nn.Sequential(BatchWhiten(), nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 3)))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)
A = torch.randn(16, 16, generator=torch.Generator().manual_seed(7))
Wt = torch.randn(16, 3, generator=torch.Generator().manual_seed(8))
t0 = time.time()
for step in range(1, args.steps + 1):
    x = torch.randn(64, 16, generator=g) @ A
    y = (x @ Wt).argmax(1)
    if rank == args.dead_feature_rank and step >= args.dead_from_step:
        x[:, 7] = 0.0  # sensor 7 stuck at 0 in this part of the shard
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0:
        print(f"rank {rank} | step {step:3d} | loss {loss.item():.4f} | {1000*(time.time()-t0)/step:.1f} ms/step",
              flush=True)
dist.barrier()
if rank == 0:
    print("done")
dist.destroy_process_group()
