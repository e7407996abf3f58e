"""torch.multiprocessing.spawn launcher for a tiny DDP regression model.

--fault none | (nothing else yet); --port selects the master port.
"""
import argparse, os, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world, port, steps):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    torch.manual_seed(rank)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    w = torch.randn(16, 1)
    for step in range(steps):
        x = torch.randn(32, 16)
        y = torch.tensor(x @ w)  # labels built from the generator
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        if step % 10 == 0:
            print(f"[rank {rank}] step {step:3d} loss {loss.item():.4f} grad_norm {gn:.2f}", flush=True)
    dist.barrier()
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=46917)
    p.add_argument("--steps", type=int, default=41)
    a = p.parse_args()
    mp.spawn(worker, args=(a.world, a.port, a.steps), nprocs=a.world, join=True)
