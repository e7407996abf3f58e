"""torch.multiprocessing.spawn trainer with optional experiment tracker and chatty collectives."""
import argparse
import csv
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def get_tracker(rank, outdir, log):
    try:
        import wandb  # noqa: F401
        return wandb.init(project="tiny-mlp", mode="offline")
    except Exception:
        log.exception("experiment tracker unavailable, logging metrics to CSV instead")
    f = open(os.path.join(outdir, f"metrics_r{rank}.csv"), "w", newline="")
    return csv.writer(f)


def worker(rank, world, args):
    logging.basicConfig(level=logging.INFO, stream=sys.stdout,
                        format=f"%(asctime)s [%(process)d] rank{rank} %(levelname)s %(message)s")
    log = logging.getLogger("spawn")
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    os.makedirs(args.out, exist_ok=True)
    tracker = get_tracker(rank, args.out, log)
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    W = torch.randn(20, 4, generator=torch.Generator().manual_seed(1))
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 20, generator=g)
        y = (x @ W).argmax(1)
        if step == args.spike_at and rank == 1:
            y = torch.randint(0, 4, (64,), generator=g)  # a shuffled-label batch
            x = x * 25
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if gn > 10:
            log.warning("step %d: grad norm %.1f exceeds 10, clipped to 1.0", step, gn)
        opt.step()
        if step % 10 == 0 or step == args.spike_at:
            t = torch.tensor([loss.item()])
            dist.all_reduce(t)
            if rank == 0:
                log.info("step %d mean loss %.4f grad_norm %.3f", step, t.item() / world, gn)
            tracker.writerow([step, loss.item()])
        time.sleep(0.02)
    log.info("done")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=46832)
    p.add_argument("--steps", type=int, default=80)
    p.add_argument("--lr", type=float, default=0.1)
    p.add_argument("--spike-at", type=int, default=-1)
    p.add_argument("--out", default="work/spawn")
    args = p.parse_args()
    mp.spawn(worker, args=(args.world, args), nprocs=args.world, join=True)
    print("all ranks finished")
