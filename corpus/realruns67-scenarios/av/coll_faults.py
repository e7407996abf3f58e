"""Hand-written data-parallel / tensor-parallel training with explicit collectives.

Launch with torchrun (env://) or with --spawn N (torch.multiprocessing.spawn).
--fault none | obj-unpicklable | slow-rank-monitored | meta-stats | tp-split | resume-missing | pidfile
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
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--port", type=int, default=31280)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--tqdm", action="store_true")
p.add_argument("--data-dir", default="/work/rr67/av/data")
p.add_argument("--resume", default="")
args = p.parse_args()


class ColumnParallelLinear(nn.Module):
    def __init__(self, in_f, out_f, world, rank):
        super().__init__()
        assert out_f % world == 0, f"{out_f} is not divisible by {world}"
        self.part = out_f // world
        self.weight = nn.Parameter(torch.randn(self.part, in_f) * 0.02)
        self.world = world

    def forward(self, x):
        y = F.linear(x, self.weight)
        outs = [torch.empty_like(y) for _ in range(self.world)]
        dist.all_gather(outs, y)
        return torch.cat(outs, -1)


class Net(nn.Module):
    def __init__(self, h, world, rank, tp=False):
        super().__init__()
        self.inp = nn.Linear(32, h)
        self.mid = ColumnParallelLinear(h, h, world, rank) if tp else nn.Linear(h, h)
        self.out = nn.Linear(h, 10)

    def forward(self, x):
        return self.out(F.relu(self.mid(F.relu(self.inp(x)))))


def allreduce_grads(model, world):
    tp_w = getattr(model.mid, "weight", None) if isinstance(model.mid, ColumnParallelLinear) else None
    for prm in model.parameters():
        if prm.grad is None or prm is tp_w:
            continue
        dist.all_reduce(prm.grad)
        prm.grad /= world


def wait_for_shard(path, rank):
    # poll shared storage until the preprocessing job has written this rank's shard
    while not os.path.exists(path):
        time.sleep(1)


def worker(rank, world):
    if args.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(args.port)
        dist.init_process_group("gloo", rank=rank, world_size=world,
                                timeout=timedelta(seconds=args.timeout))
    else:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
        rank, world = dist.get_rank(), dist.get_world_size()
    if args.fault == "pidfile":
        with open(f"/work/rr67/av/run/pid.{rank}", "w") as f:
            f.write(str(os.getpid()))
    torch.manual_seed(1234)
    model = Net(args.hidden, world, rank, tp=args.fault == "tp-split")
    if args.resume:
        # rank 0 loads the checkpoint and broadcasts it
        if rank == 0:
            state = torch.load(args.resume, map_location="cpu")
            objs = [state]
        else:
            objs = [None]
        dist.broadcast_object_list(objs, src=0)
        model.load_state_dict(objs[0])
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    stats = torch.zeros(2)
    if args.fault == "meta-stats":
        # running statistics allocated lazily alongside a meta-initialised model skeleton
        with torch.device("meta"):
            stats = torch.zeros(2)
    gen = torch.Generator().manual_seed(rank)
    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"train[r{rank}]", position=rank, leave=True, mininterval=0)
    for step in it:
        if args.fault == "slow-rank-data" and rank == args.rank and step == args.step:
            wait_for_shard(os.path.join(args.data_dir, f"shard-{rank:05d}-of-{world:05d}.bin"), rank)
        x = torch.randn(16, 32, generator=gen)
        y = torch.randint(0, 10, (16,), generator=gen)
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        allreduce_grads(model, world)
        opt.step()
        stats += torch.stack([loss.detach(), torch.tensor(1.0)]).to(stats.device)
        if step % 2 == 1:
            if args.fault == "slow-rank-monitored" and rank == args.rank and step == args.step:
                wait_for_shard(os.path.join(args.data_dir, f"val-{rank:05d}.bin"), rank)
            if args.fault == "slow-rank-monitored":
                dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)
            s = stats.clone()
            dist.all_reduce(s)
            if rank == 0:
                msg = f"step {step} avg_loss {(s[0] / s[1]).item():.4f}"
                if args.tqdm:
                    it.write(msg)
                else:
                    print(msg, flush=True)
    # end of epoch: gather per-rank metric objects for the report
    metrics = {"rank": rank, "loss": float(stats[0] / stats[1]) if stats.device.type == "cpu" else 0.0}
    if args.fault == "obj-unpicklable":
        metrics["samples"] = (i for i in range(args.steps * 16))  # lazily counted samples
    gathered = [None] * world
    dist.all_gather_object(gathered, metrics)
    if rank == 0:
        print("per-rank metrics:", gathered, flush=True)
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn:
        mp.spawn(worker, args=(args.spawn,), nprocs=args.spawn, join=True)
    else:
        worker(None, None)
