"""Tiny tensor-parallel MLP on a DeviceMesh with DTensor (gloo, CPU).

--fault: none | mesh_shape | mixed_tensor | tp_heads
"""
import argparse
import os
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard, Replicate, distribute_tensor
from torch.distributed.tensor.parallel import (ColwiseParallel, RowwiseParallel,
                                               parallelize_module)

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--dp", type=int, default=1)
p.add_argument("--tp", type=int, default=2)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--hidden", type=int, default=64)
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()

mesh = init_device_mesh("cpu", (args.dp, args.tp), mesh_dim_names=("dp", "tp"))
tp_mesh = mesh["tp"]
print(f"[rank{rank}] mesh={mesh}", flush=True)


class MLP(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.up = nn.Linear(d, h)
        self.down = nn.Linear(h, d)
        self.norm_scale = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return self.down(torch.relu(self.up(x))) * self.norm_scale


torch.manual_seed(0)
model = MLP(32, args.hidden)
model = parallelize_module(model, tp_mesh, {"up": ColwiseParallel(), "down": RowwiseParallel()})
opt = torch.optim.SGD(model.parameters(), lr=0.01)

x = torch.randn(8, 32)
y = torch.randn(8, 32)
for step in range(args.steps):
    out = model(x)
    loss = ((out - y) ** 2).mean()
    if args.fault == "mixed_tensor" and step >= 2:
        # soft-orthogonality regulariser on the up-projection, enabled after warm-up
        W = model.up.weight
        ortho = ((W.T @ W) - torch.eye(W.shape[1])).pow(2).sum()
        loss = loss + 1e-3 * ortho
    opt.zero_grad()
    loss.backward()
    opt.step()
    if rank == 0:
        print(f"step {step} loss {loss.item():.4f}", flush=True)

dist.destroy_process_group()
