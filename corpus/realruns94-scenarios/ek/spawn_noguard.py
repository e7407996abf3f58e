"""Quick experiment script: DDP via torch.multiprocessing.spawn, written without a __main__ guard."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def worker(rank, world):
    dist.init_process_group("gloo", init_method="tcp://127.0.0.1:40641", rank=rank, world_size=world,
                            timeout=timedelta(seconds=20))
    m = nn.parallel.DistributedDataParallel(nn.Linear(8, 2))
    for _ in range(5):
        m(torch.randn(4, 8)).sum().backward()
    dist.destroy_process_group()


WORLD = 2
print(f"launching {WORLD} ranks (pid {os.getpid()})", flush=True)
ctx = mp.get_context("spawn")
procs = []
for r in range(WORLD):
    p = ctx.Process(target=worker, args=(r, WORLD))
    p.start()
    procs.append(p)
for p in procs:
    p.join()
print("exit codes:", [p.exitcode for p in procs])
