"""Quick experiment script written as a flat notebook-style file: no `if __name__ == "__main__":` guard.

--mode loader : DataLoader with spawn workers (as on macOS/Windows defaults, or set explicitly)
--mode mpspawn: torch.multiprocessing.spawn launching DDP workers from module level
"""
import argparse
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--mode", default="loader", choices=["loader", "mpspawn"])
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--port", default="39720")
args, _ = p.parse_known_args()


class Squares(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        x = torch.full((8,), float(i) / 256)
        return x, x.pow(2).sum()


print(f"[{os.getpid()}] building model, start method={mp.get_start_method(allow_none=True)}", flush=True)
model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = args.port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(20):
        x = torch.randn(16, 8)
        loss = (ddp(x).squeeze(1) - x.pow(2).sum(1)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"rank {rank} final loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if args.mode == "loader":
    dl = DataLoader(Squares(), batch_size=32, shuffle=True, num_workers=args.workers,
                    multiprocessing_context="spawn", persistent_workers=False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(args.epochs):
        for x, y in dl:
            loss = (model(x).squeeze(1) - y).pow(2).mean()
            opt.zero_grad(); loss.backward(); opt.step()
        print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
else:
    mp.spawn(worker, args=(2,), nprocs=2, join=True)
