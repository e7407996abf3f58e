"""torch.multiprocessing.spawn launcher for a tiny DDP job with an explicit init_method.

Simulates "node" launches by hand: --node-rank and --nprocs give the global ranks,
--world-size is what the job config says the job has.
"""
import argparse
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(local_rank, args):
    rank = args.node_rank * args.nprocs + local_rank
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)s [node{args.node_rank} rank{rank}] %(message)s")
    log = logging.getLogger("spawn_train")
    log.info("connecting to %s as rank %d of %d", args.init_method, rank, args.world_size)
    dist.init_process_group("gloo", init_method=args.init_method, rank=rank,
                            world_size=args.world_size,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    log.info("joined process group")
    torch.manual_seed(rank)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for step in range(args.steps):
        x = torch.randn(32, 16)
        y = x[:, :1] * 0.5
        loss = ((model(x) - y) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 and rank == 0:
            log.info("step %d mse %.5f", step, loss.item())
        time.sleep(0.02)
    dist.barrier()
    log.info("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--init-method", required=True)
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--node-rank", type=int, default=0)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--pg-timeout", type=float, default=30)
    args = p.parse_args()
    print(f"launching {args.nprocs} workers on node {args.node_rank} (pid {os.getpid()})", flush=True)
    mp.spawn(worker, args=(args,), nprocs=args.nprocs, join=True)
