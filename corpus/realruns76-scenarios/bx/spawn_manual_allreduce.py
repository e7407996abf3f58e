"""Data-parallel training started with torch.multiprocessing.spawn, gradients averaged by hand
(one all_reduce per parameter, the pre-DDP pattern). gloo, CPU.

Faults:
  none     healthy (prints through buffered stdout; scheduler stepped before optimizer on the first step,
           torch.tensor(tensor) copy warning)
  freeze   the fault rank freezes the embedding after --fault-step ("warm start") and skips its gradient
           in the manual all_reduce loop -> ranks all-reduce different tensors
"""
import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F


def worker(rank, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=args.nprocs, timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(50, 16), nn.Flatten(), nn.Linear(16 * 8, 32), nn.Tanh(), nn.Linear(32, 4))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    g = torch.Generator().manual_seed(rank)
    print(f"[worker {rank}] started pid={os.getpid()}")
    for step in range(args.steps):
        if args.fault == "none" and step == 0:
            sched.step()  # (bug-ish) stepping the scheduler at the top of the loop
        x = torch.randint(0, 50, (16, 8), generator=g)
        y = (x.sum(1) % 4)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        if args.fault == "freeze" and rank == args.fault_rank and step == args.fault_step:
            model[0].weight.requires_grad_(False)
            model[0].weight.grad = None
            print(f"[worker {rank}] freezing embedding (warm start done)")
        for p in model.parameters():
            if p.grad is None:
                continue
            dist.all_reduce(p.grad)
            p.grad /= args.nprocs
        opt.step()
        if args.fault == "none":
            lr_t = torch.tensor(torch.tensor(sched.get_last_lr()))
        else:
            sched.step()
        t = torch.tensor([loss.item()])
        dist.all_reduce(t)
        if rank == 0:
            print(f"step {step:3d} | loss {t.item() / args.nprocs:.4f} | lr {sched.get_last_lr()[0]:.4f}")
        if args.fault == "none" and step > 0:
            sched.step()
        time.sleep(0.05)
    dist.barrier()
    if rank == 0:
        print("finished", args.steps, "steps")
    dist.destroy_process_group()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--nprocs", type=int, default=2)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--fault", default="none")
    ap.add_argument("--fault-rank", type=int, default=1)
    ap.add_argument("--fault-step", type=int, default=6)
    ap.add_argument("--port", type=int, default=35740)
    args = ap.parse_args()
    print(f"spawning {args.nprocs} workers")
    mp.spawn(worker, args=(args,), nprocs=args.nprocs, join=True)
