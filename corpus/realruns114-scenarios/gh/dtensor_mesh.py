"""DTensor / DeviceMesh tensor-parallel MLP on CPU with gloo. --dp/--tp set the 2-D mesh."""
import argparse, os, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor.parallel import parallelize_module, ColwiseParallel, RowwiseParallel

p = argparse.ArgumentParser()
p.add_argument("--dp", type=int, default=1); p.add_argument("--tp", type=int, default=2)
p.add_argument("--hidden", type=int, default=256); p.add_argument("--steps", type=int, default=6)
args = p.parse_args()
dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
print(f"[rank{rank}] world={world} mesh=(dp={args.dp}, tp={args.tp}) hidden={args.hidden}", flush=True)
mesh = init_device_mesh("cpu", (args.dp, args.tp), mesh_dim_names=("dp", "tp"))
tp_mesh = mesh["tp"]
torch.manual_seed(0)
mlp = nn.Sequential(nn.Linear(64, args.hidden), nn.GELU(), nn.Linear(args.hidden, 64))
mlp = parallelize_module(mlp, tp_mesh, {"0": ColwiseParallel(), "2": RowwiseParallel()})
opt = torch.optim.SGD(mlp.parameters(), lr=0.05)
g = torch.Generator().manual_seed(mesh.get_local_rank("dp") if args.dp > 1 else 0)
for step in range(args.steps):
    x = torch.randn(16, 64, generator=g); y = x.flip(-1)
    loss = nn.functional.mse_loss(mlp(x), y)
    loss.backward(); opt.step(); opt.zero_grad()
    print(f"[rank{rank}] step {step} loss {loss.item():.5f}", flush=True)
dist.barrier(); print(f"[rank{rank}] done", flush=True)
dist.destroy_process_group()
