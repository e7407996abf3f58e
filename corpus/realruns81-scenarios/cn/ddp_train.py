#!/usr/bin/env python
"""Tiny DDP regression/classification trainer used under various wrappers.

Faults are selected with --fault; each one is a realistic bug/misconfiguration,
activated only on --fault-rank (or all ranks with -1) from --fault-step on.
"""
import argparse
import ctypes
import json
import logging
import math
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--config", default=None, help="optional JSON config file")
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--in-dim", type=int, default=16)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--make-data", default=None, help="write per-rank shards here and exit")
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--bad-shard", type=int, default=-1)
    p.add_argument("--save-dir", default=None)
    p.add_argument("--save-every", type=int, default=10)
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=5)
    p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
    p.add_argument("--noisy", action="store_true")
    p.add_argument("--step-sleep", type=float, default=0.05)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def make_data(d, shards, in_dim, bad):
    os.makedirs(d, exist_ok=True)
    g = torch.Generator().manual_seed(1234)
    w = torch.randn(in_dim, 1, generator=g)
    for s in range(shards):
        dim = in_dim - 4 if s == bad else in_dim  # stale shard from the old feature pipeline
        x = torch.randn(256, dim, generator=g)
        y = (x[:, :in_dim] @ w[:dim] if dim < in_dim else x @ w) + 0.1 * torch.randn(256, 1, generator=g)
        torch.save({"x": x, "y": y}, os.path.join(d, f"shard_{s:03d}.pt"))
        print(f"wrote {d}/shard_{s:03d}.pt x={tuple(x.shape)}")


class Net(nn.Module):
    def __init__(self, in_dim, hidden, aux_head=False):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)
        self.aux = nn.Linear(hidden, 4) if aux_head else None

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        return self.out(h)


def main():
    args = parse()
    if args.config:
        with open(args.config) as f:
            cfg = json.load(f)
        for k, v in cfg.items():
            setattr(args, k.replace("-", "_"), v)
    if args.make_data:
        make_data(args.make_data, args.shards, args.in_dim, args.bad_shard)
        return

    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)

    if args.log_style == "logging":
        logging.basicConfig(level=logging.INFO,
                            format=f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s")
    log = logging.getLogger("train")

    def say(msg):
        if args.log_style == "logging":
            log.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    faulty = args.fault != "none" and (args.fault_rank < 0 or args.fault_rank == rank)

    # --- data ---------------------------------------------------------------
    if args.data_dir:
        files = sorted(f for f in os.listdir(args.data_dir) if f.endswith(".pt"))
        mine = files[rank::world]
        xs, ys = [], []
        for fn in mine:
            d = torch.load(os.path.join(args.data_dir, fn))
            xs.append(d["x"]); ys.append(d["y"])
        say(f"loaded {len(mine)} shards: {mine}")
        datasets = list(zip(xs, ys))
    else:
        g = torch.Generator().manual_seed(100 + rank)
        x = torch.randn(512, args.in_dim, generator=g)
        y = x.sum(1, keepdim=True) * 0.1
        datasets = [(x, y)]

    if args.fault == "slow-cache" and faulty:
        # this rank rebuilds a feature cache that the others found already built
        say("feature cache missing, rebuilding (this can take a while) ...")
        t0 = time.time()
        while time.time() - t0 < 25:
            torch.randn(256, 256) @ torch.randn(256, 256)
        say("feature cache rebuilt")
    if args.fault == "slow-cache":
        dist.monitored_barrier(timeout=timedelta(seconds=10))
        say("all ranks passed data barrier")

    hidden = args.hidden
    if args.fault == "model-mismatch" and faulty:
        hidden = int(os.environ.get("HIDDEN_SIZE", hidden))
    model = Net(args.in_dim, hidden, aux_head=(args.fault == "unused-head"))
    if args.noisy and rank == 0:
        warnings.warn("torch.distributed: no device_id given to init_process_group; using CPU for barrier()",
                      UserWarning)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
    if args.noisy:
        # scheduler stepped before the optimizer on the first iteration (harmless warning)
        sched.step()

    it = range(args.steps)
    if args.log_style == "tqdm":
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", disable=(rank != 0), mininterval=0, ncols=80)

    open_handles = []
    for step in it:
        x, y = datasets[step % len(datasets)]
        idx = torch.randint(0, x.shape[0], (args.batch_size,))
        xb, yb = x[idx], y[idx]

        if args.fault == "open-files" and faulty:
            # bug: per-step metrics file opened in append mode and never closed
            for k in range(200):
                open_handles.append(open(os.path.join(args.save_dir, f"metrics_r{rank}.jsonl"), "a"))

        if args.fault == "hang-wait-file" and faulty and step == args.fault_step:
            path = os.path.join(args.save_dir or "/tmp", f"ready_step{step}.flag")
            say(f"waiting for {path} from rank 0 before continuing ...")
            while not os.path.exists(path):
                time.sleep(1.0)

        if args.fault == "eval-on-rank" and faulty and step == args.fault_step:
            # validation is only run on this rank, the others carry on training
            say(f"running validation at step {step} ...")
            t0 = time.time(); vl = 0.0
            while time.time() - t0 < 40:
                with torch.no_grad():
                    vl = F.mse_loss(ddp.module(torch.randn(4096, args.in_dim)), torch.zeros(4096, 1)).item()
            say(f"validation loss {vl:.4f}")

        if args.fault == "segv" and faulty and step == args.fault_step:
            say("calling native fused-op extension")
            ctypes.string_at(0)  # native code dereferences a NULL pointer

        pred = ddp(xb)
        loss = F.mse_loss(pred, yb)
        if args.fault == "unused-head":
            pass  # aux head defined but never used in forward
        opt.zero_grad()
        loss.backward()
        if args.noisy and step == 3:
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
            if rank == 0:
                print(f"WARNING: gradient norm {gn.item()*40:.1f} exceeds max_norm 1.0, clipping", flush=True)
        opt.step()
        sched.step()

        lv = loss.item()
        if not math.isfinite(lv):
            print(f"Loss is {lv}, stopping training", flush=True)
            sys.exit(1)

        metrics = {"loss": torch.tensor([lv])}
        if args.fault == "collective-extra-metric" and faulty and step >= args.fault_step:
            metrics["grad_norm"] = torch.tensor([0.0])  # only this rank logs grad_norm
        for k in sorted(metrics):
            dist.all_reduce(metrics[k])
        avg = metrics["loss"].item() / world
        if step % 5 == 0 or step == args.steps - 1:
            if args.log_style == "tqdm":
                if rank == 0:
                    it.set_postfix(loss=f"{avg:.4f}")
            else:
                say(f"step {step:3d} loss {avg:.4f} lr {sched.get_last_lr()[0]:.4f}")

        if args.save_dir and (step + 1) % args.save_every == 0:
            if rank == 0:
                os.makedirs(args.save_dir, exist_ok=True)
                p = os.path.join(args.save_dir, f"ckpt_step{step+1}.pt")
                torch.save({"model": ddp.state_dict(), "opt": opt.state_dict(), "step": step + 1}, p)
                say(f"saved checkpoint {p}")
            dist.barrier()
        time.sleep(args.step_sleep)

    say("training finished")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
