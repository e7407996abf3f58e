"""torch.multiprocessing.spawn launcher for a compiled MLP trainer (gloo, CPU).

--fault:
  none         healthy
  cache-ro     TORCHINDUCTOR_CACHE_DIR pointed at a shared cache directory we cannot write
  recompile-err  torch._dynamo.config.error_on_recompile=True (CI setting) with a changing batch size on --fault-rank
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
    if args.cache_dir:
        os.environ["TORCHINDUCTOR_CACHE_DIR"] = args.cache_dir
    dist.init_process_group("gloo", rank=rank, world_size=args.world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 4))
    ddp = nn.parallel.DistributedDataParallel(model)
    if args.fault == "recompile-err":
        torch._dynamo.config.error_on_recompile = True
    cm = torch.compile(ddp, backend=args.backend_name)
    opt = torch.optim.Adam(cm.parameters(), lr=1e-3)
    print(f"rank {rank}/{args.world} pid {os.getpid()} compile backend={args.backend_name} "
          f"cache={os.environ.get('TORCHINDUCTOR_CACHE_DIR')}", flush=True)
    for step in range(args.steps):
        bs = 32
        if args.fault == "recompile-err" and rank == args.fault_rank and step == args.fault_step:
            bs = 31  # last, partial batch of the shard (drop_last=False)
        x = torch.randn(bs, 16)
        y = torch.randint(0, 4, (bs,))
        t = time.time()
        loss = F.cross_entropy(cm(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"rank {rank} | step {step:3d} | loss {loss.item():.4f} | {1000*(time.time()-t):.0f} ms", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    print(f"rank {rank} done", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=3)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=46631)
    p.add_argument("--backend-name", default="inductor")
    p.add_argument("--cache-dir", default="")
    args = p.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.world, join=True)
