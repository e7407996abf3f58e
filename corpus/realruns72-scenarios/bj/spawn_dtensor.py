"""DTensor data-parallel toy launched with torch.multiprocessing.spawn (no torchrun)."""
import os, sys, time
from datetime import timedelta
import torch, torch.distributed as dist, torch.multiprocessing as mp
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import distribute_tensor, Replicate, Shard

WORLD = int(os.environ.get("WORLD", "2"))
PORT = os.environ.get("PORT", "32090")

def run(rank, world):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=PORT)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    mesh = init_device_mesh("cpu", (world,))
    w = distribute_tensor(torch.randn(64, 16), mesh, [Replicate()])
    for step in range(5):
        x = distribute_tensor(torch.randn(32, 64), mesh, [Shard(0)])
        y = (x @ w).full_tensor()
        if rank == 0: print(f"step {step} out_norm {y.norm():.3f}", flush=True)
    dist.destroy_process_group()

# launch (guard dropped when this was turned from a notebook cell into a script)
mp.spawn(run, args=(WORLD,), nprocs=WORLD, join=True)
