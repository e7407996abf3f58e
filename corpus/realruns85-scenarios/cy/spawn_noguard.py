"""Notebook-turned-script: mp.spawn called at module level (no `if __name__ == "__main__":` guard)."""
import os
from datetime import timedelta
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "37475")
WORLD = 2


def run(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(5):
        x = torch.randn(16, 8)
        loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0:
            print(f"step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


print(f"launching {WORLD} workers", flush=True)
mp.spawn(run, args=(WORLD,), nprocs=WORLD, join=True)
print("all workers finished", flush=True)
