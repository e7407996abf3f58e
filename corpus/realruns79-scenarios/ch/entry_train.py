"""Trainer with two entry modes, as many research repos have:
  --launch spawn : torch.multiprocessing.spawn of --world processes, MASTER_ADDR/MASTER_PORT from the
                   environment (defaults 127.0.0.1:36370)
  --launch auto  : single `python` process; if WORLD_SIZE>1 is found in the environment it joins a
                   process group (env://), otherwise trains alone
  --launch env   : always init_process_group(env://) (meant to be started by torchrun)
Python logging with timestamps.
"""
import argparse
import logging
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

log = logging.getLogger("entry_train")


def setup_logging(rank):
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s %(levelname)-7s [rank {rank}] %(name)s: %(message)s",
                        force=True)


def train(rank, world, args, distributed):
    setup_logging(rank)
    if distributed:
        log.info("joining process group %s:%s as rank %d/%d", os.environ.get("MASTER_ADDR"),
                 os.environ.get("MASTER_PORT"), rank, world)
        if args.launch == "spawn":
            dist.init_process_group("gloo", rank=rank, world_size=world,
                                    timeout=timedelta(seconds=args.pg_timeout))
        else:
            dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
        log.info("process group ready (backend=%s, world_size=%d)", dist.get_backend(), world)
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 4))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(1024, 32, generator=g)
    y = (x[:, :4]).argmax(1)
    for step in range(1, args.steps + 1):
        idx = torch.randint(0, 1024, (64,), generator=g)
        loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        time.sleep(args.step_sleep)
        if step % 5 == 0:
            log.info("step %d/%d loss=%.4f", step, args.steps, loss.item())
    if distributed:
        dist.barrier()
        dist.destroy_process_group()
    log.info("done")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--launch", choices=["spawn", "auto", "env"], default="auto")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--step-sleep", type=float, default=0.05)
    p.add_argument("--pg-timeout", type=int, default=30)
    args = p.parse_args()
    if args.launch == "spawn":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "36370")
        mp.spawn(train, args=(args.world, args, True), nprocs=args.world, join=True)
    elif args.launch == "auto":
        world = int(os.environ.get("WORLD_SIZE", "1"))
        rank = int(os.environ.get("RANK", "0"))
        train(rank, world, args, world > 1)
    else:
        train(int(os.environ.get("RANK", "0")), 0, args, True)


if __name__ == "__main__":
    main()
