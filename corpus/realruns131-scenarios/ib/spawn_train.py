"""torch.multiprocessing.spawn trainer (no torchrun) for externally ended runs.

Each rank writes its pid to $RR_PIDDIR/rank<N>.pid so a test harness can signal or limit one rank.
--fault leak: a rank keeps per-step activation snapshots (a real leak); with an address-space limit
applied to that rank from outside (prlimit --as) the allocation fails there first.
"""
import argparse
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn


def worker(rank, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    d = os.environ.get("RR_PIDDIR")
    if d:
        os.makedirs(d, exist_ok=True)
        open(os.path.join(d, f"rank{rank}.pid"), "w").write(str(os.getpid()))
    dist.init_process_group("gloo", rank=rank, world_size=args.nprocs,
                            timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(128, 256), nn.GELU(), nn.Linear(256, 256), nn.GELU(), nn.Linear(256, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10)
    if rank == 0 and args.noisy:
        # ordering bug that only warns: scheduler stepped once before the first optimizer step
        sched.step()
    g = torch.Generator().manual_seed(rank)
    keep = []
    t0 = time.time()
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 128, generator=g)
        y = torch.randint(0, 10, (64,), generator=g)
        out = ddp(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if args.fault == "leak" and rank == args.fault_rank:
            # debugging hook left on: stores a 16 MiB float copy of the batch stats every step
            keep.append(torch.ones(4 * 1024 * 1024))
        if step % 5 == 0:
            print(f"[rank {rank}] step {step:4d} loss {loss.item():.4f} "
                  f"{(time.time()-t0)/step*1000:.0f} ms/step", flush=True)
        if args.noisy and rank == 1 and step == 3:
            warnings.warn("Detected call of `lr_scheduler.step()` before `optimizer.step()` on rank 0; "
                          "first value of the learning rate schedule was skipped")
        time.sleep(args.step_sleep)
    dist.barrier()
    if rank == 0:
        print(f"done: {args.steps} steps, final loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=46290)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--step-sleep", type=float, default=0.2)
    p.add_argument("--fault", default="none", choices=["none", "leak"])
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--noisy", action="store_true")
    args = p.parse_args()
    print(f"spawning {args.nprocs} processes (pid {os.getpid()})", flush=True)
    mp.spawn(worker, args=(args,), nprocs=args.nprocs, join=True)
