"""torch.multiprocessing.spawn launcher with tcp:// init; rank 0 hosts the TCPStore.

--stall-rank R --stall-where {before-init,none}: the rank writes its pid and waits for the
driver (which kill -STOPs it) before joining init_process_group.
"""
import argparse
import os
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", type=int, default=47550)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--init-timeout", type=float, default=20)
p.add_argument("--stall-rank", type=int, default=-1)
p.add_argument("--statedir", default="state")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--slow-rank", type=int, default=-1)


def worker(rank, args):
    os.makedirs(args.statedir, exist_ok=True)
    with open(os.path.join(args.statedir, f"rank{rank}.pid"), "w") as f:
        f.write(str(os.getpid()))
    print(f"[rank{rank}] pid {os.getpid()} connecting to tcp://127.0.0.1:{args.port}", flush=True)
    if rank == args.stall_rank:
        # prefetch of the dataset index before joining; the driver stops this process here
        time.sleep(3)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{args.port}", rank=rank,
                            world_size=args.nprocs, timeout=timedelta(seconds=args.init_timeout))
    print(f"[rank{rank}] joined process group of {dist.get_world_size()}", flush=True)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    aux = nn.Linear(64, 4)  # auxiliary head kept for a later ablation
    net = nn.ModuleDict({"body": model, "aux": aux})

    class Wrap(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, x):
            return self.m["body"](x)

    ddp = DDP(Wrap(net), find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(1, args.steps + 1):
        x = torch.randn(16, 32, generator=g)
        y = torch.randint(0, 4, (16,), generator=g)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == args.slow_rank:
            time.sleep(0.6)
        if step % 5 == 0:
            dist.monitored_barrier(timeout=timedelta(seconds=30), wait_all_ranks=True)
            print(f"[rank{rank}] step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()
    print(f"[rank{rank}] done", flush=True)


if __name__ == "__main__":
    args = p.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.nprocs, join=True)
