"""Healthy 2-process training via torch.multiprocessing.spawn (gloo, CPU) with the usual warnings."""
import argparse, os, sys, time
from datetime import timedelta
import numpy as np
import torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

def worker(rank, world, port, steps):
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                            timeout=timedelta(seconds=30))
    rng = np.random.default_rng(rank)
    feats = rng.standard_normal((1024, 32)).astype(np.float32)
    feats.setflags(write=False)                      # memory-mapped features are read-only
    x_all = torch.from_numpy(feats)                  # -> UserWarning: non-writable NumPy array
    y_all = (x_all[:, :3].sum(1) > 0).long()
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)
    sched.step()                                     # called before optimizer.step(): UserWarning
    bar = None
    if rank == 0:
        from tqdm import tqdm
        bar = tqdm(range(steps), desc="epoch 0", ncols=100)
    for step in range(steps):
        idx = torch.randint(0, 1024, (32,))
        loss = F.cross_entropy(model(x_all[idx]), y_all[idx])
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        if bar is not None:
            bar.update(1); bar.set_postfix(loss=f"{loss.item():.3f}", lr=f"{sched.get_last_lr()[0]:.3g}")
        time.sleep(0.02)
    if bar is not None:
        bar.close()
    acc = torch.tensor([(model(x_all).argmax(1) == y_all).float().mean().item()])
    dist.all_reduce(acc); acc /= world
    if rank == 0:
        print(f"final train accuracy {acc.item():.3f}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser(); p.add_argument("--port", type=int, default=42530); p.add_argument("--steps", type=int, default=60)
    a = p.parse_args()
    mp.spawn(worker, args=(2, a.port, a.steps), nprocs=2, join=True)
