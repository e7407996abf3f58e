"""torch.multiprocessing.spawn launcher for a tiny DDP classifier (gloo, CPU).

--fault none : healthy run (prints the usual scary-looking warnings)
--fault state_dict : every rank resumes from a checkpoint of a different architecture
"""
import argparse
import datetime
import logging
import os
import warnings

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def build(hidden):
    return nn.Sequential(nn.Linear(20, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 5))


def worker(rank, world, args):
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [%(levelname)s] rank={rank} %(message)s")
    log = logging.getLogger("spawn_train")
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=30))
    torch.manual_seed(0)
    model = build(args.hidden)
    if args.resume:
        log.info("resuming from %s", args.resume)
        ck = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ck["model"])
    ddp = DDP(model, find_unused_parameters=True)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    # labels come from a numpy buffer shared with the data pipeline (read-only view)
    rng = np.random.default_rng(rank)
    feats = rng.normal(size=(512, 20)).astype(np.float32)
    labels = (feats[:, :5].argmax(1)).astype(np.int64)
    labels.setflags(write=False)
    y_all = torch.from_numpy(labels)
    x_all = torch.from_numpy(feats)
    if rank == 0:
        sched.step()  # "warm start" of the schedule before the first optimizer step
    for epoch in range(args.epochs):
        perm = torch.randperm(512)
        tot = 0.0
        for i in range(0, 512, 64):
            idx = perm[i:i + 64]
            out = ddp(x_all[idx])
            loss = F.cross_entropy(out, y_all[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        sched.step()
        acc = (ddp(x_all).argmax(1) == y_all).float().mean().item()
        log.info("epoch %d loss %.4f train_acc %.3f lr %.4f", epoch, tot / 8, acc, sched.get_last_lr()[0])
    if rank == 0 and args.save:
        torch.save({"model": model.state_dict()}, args.save)
        log.info("saved %s", args.save)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=47640)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--resume", default="")
    p.add_argument("--save", default="")
    args = p.parse_args()
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
