"""Quick DDP launcher script written without an `if __name__ == "__main__":` guard."""
import datetime
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

PORT = int(sys.argv[1]) if len(sys.argv) > 1 else 47883


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(PORT)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=20))
    model = nn.parallel.DistributedDataParallel(nn.Linear(8, 2))
    for step in range(5):
        loss = model(torch.randn(4, 8)).pow(2).mean()
        loss.backward()
        print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


print(f"launching 2 workers (torch {torch.__version__})", flush=True)
mp.spawn(worker, args=(2,), nprocs=2, join=True)
print("all workers done", flush=True)
