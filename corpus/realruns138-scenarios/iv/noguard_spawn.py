"""Notebook-style script converted to a file: trains 2 ranks with mp.spawn but has no __main__ guard."""
import os, datetime, sys
import torch, torch.nn as nn, torch.distributed as dist
import torch.multiprocessing as mp

PORT = int(os.environ.get("RR_PORT", "46688"))
WORLD = 2

def train(rank):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(PORT)
    dist.init_process_group("gloo", rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=15))
    m = nn.parallel.DistributedDataParallel(nn.Linear(8, 1))
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    for step in range(20):
        loss = m(torch.randn(16, 8)).pow(2).mean(); opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0: print(f"rank {rank} step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()

print(f"setting up run, torch {torch.__version__}, world size {WORLD}", flush=True)
mp.spawn(train, nprocs=WORLD)
