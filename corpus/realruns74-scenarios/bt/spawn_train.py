"""mp.spawn-launched tiny DDP trainer (gloo, CPU). --fault picks the bug."""
import argparse
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=2)
p.add_argument("--port", default="35240")
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=15)
args = p.parse_args()


def worker(rank, world, port, transform):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    torch.manual_seed(rank)
    model = DDP(nn.Linear(8, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(args.steps):
        x = transform(torch.randn(32, 8))
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0 and step % 5 == 0:
            print(f"rank0 step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


def scale(x):
    return x * 0.5


if __name__ == "__main__":
    if args.fault == "lambda":
        transform = lambda x: x * 0.5  # noqa: E731
    else:
        transform = scale
    mp.spawn(worker, args=(args.world, args.port, transform), nprocs=args.world, join=True)
    print("done")
