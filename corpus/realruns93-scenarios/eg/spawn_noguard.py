#!/usr/bin/env python
# quick multi-process smoke-train, written as a flat script (no __main__ guard)
import datetime, os, sys
import torch, torch.distributed as dist, torch.multiprocessing as mp, torch.nn as nn

def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = "40241"
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    m = nn.Linear(8, 1)
    for step in range(200):
        loss = m(torch.randn(4, 8)).pow(2).mean(); loss.backward()
        print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()

print(f"smoke-train: pid={os.getpid()} torch={torch.__version__}", flush=True)
mp.spawn(worker, args=(2,), nprocs=2, join=True)
