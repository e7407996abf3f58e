"""Quick DDP experiment script launched with torch.multiprocessing.spawn -- written as a flat script
(no `if __name__ == "__main__":` guard), which is how it looked in the notebook it was copied from."""
import os
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

WORLD = 3
os.environ["MASTER_ADDR"] = "127.0.0.1"
os.environ["MASTER_PORT"] = "37670"
print(f"config: world={WORLD} backend=gloo lr=1e-3")


def worker(rank, world):
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    model = nn.parallel.DistributedDataParallel(nn.Linear(16, 4))
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    for step in range(20):
        loss = model(torch.randn(8, 16)).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            print(f"rank {rank} step {step} loss {loss.item():.4f}")
    dist.destroy_process_group()


mp.set_start_method("spawn", force=True)
procs = []
for r in range(WORLD):
    p = mp.Process(target=worker, args=(r, WORLD))
    p.start()
    procs.append(p)
for p in procs:
    p.join()
print("all workers finished")
