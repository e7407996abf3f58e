"""Shared tiny DDP training loop used by the outside-stop scenario families."""
import argparse
import datetime
import logging
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler


def base_parser():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--step-sleep", type=float, default=0.2)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--ckpt-dir", default=None)
    p.add_argument("--ckpt-every", type=int, default=10)
    p.add_argument("--ckpt-mode", choices=["torch", "pyfile"], default="torch")
    p.add_argument("--ckpt-ranks", choices=["all", "rank0"], default="all")
    p.add_argument("--ckpt-mb", type=float, default=0.0, help="extra padding tensor in checkpoint (MB)")
    p.add_argument("--resume", default=None)
    p.add_argument("--use-tqdm", action="store_true")
    p.add_argument("--use-logging", action="store_true")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--noise", action="store_true", help="emit typical harmless warnings")
    p.add_argument("--shards", type=int, default=0, help="open N shard files per rank (kept open)")
    p.add_argument("--grow-mb", type=float, default=0.0, help="keep a cache that grows by N MB per step")
    p.add_argument("--metrics-file", default=None)
    p.add_argument("--mp-context", default=None, help="DataLoader multiprocessing_context (fork/spawn/forkserver)")
    return p


class ToyDS(Dataset):
    def __init__(self, n=4096, d=32, shard_dir=None, shards=0):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, d, generator=g)
        self.y = (self.x[:, :4].sum(1) > 0).long()
        self.handles = []
        if shard_dir and shards:
            os.makedirs(shard_dir, exist_ok=True)
            for i in range(shards):
                path = os.path.join(shard_dir, f"shard-{i:05d}.bin")
                if not os.path.exists(path):
                    with open(path, "wb") as f:
                        f.write(os.urandom(256))
                # memory-mapped style reader: keep the shard handle open
                self.handles.append(open(path, "rb"))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def setup_logging(rank):
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s",
        stream=sys.stdout,
    )
    return logging.getLogger("train")


def init_dist(timeout_s):
    if "RANK" in os.environ and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=timeout_s))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def save_ckpt(args, model, opt, step, rank, log):
    if not args.ckpt_dir:
        return
    if args.ckpt_ranks == "rank0" and rank != 0:
        return
    os.makedirs(args.ckpt_dir, exist_ok=True)
    state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}
    if args.ckpt_mb:
        state["ema_buffer"] = torch.randn(int(args.ckpt_mb * 1024 * 1024 / 4))
    path = os.path.join(args.ckpt_dir, f"ckpt-rank{rank}-step{step}.pt")
    if args.ckpt_mode == "pyfile":
        with open(path, "wb") as f:
            torch.save(state, f)
            f.flush()
            os.fsync(f.fileno())
    else:
        torch.save(state, path)
    log(f"saved checkpoint {path}")


def run(args, rank, world):
    torch.manual_seed(1234)
    lg = setup_logging(rank) if args.use_logging else None

    def log(msg):
        if lg:
            lg.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    log(f"pid={os.getpid()} world_size={world} cwd={os.getcwd()}")
    if args.noise:
        warnings.warn("torch.utils._pytree._register_pytree_node is deprecated. Please use "
                      "torch.utils._pytree.register_pytree_node instead.", FutureWarning)
    ds = ToyDS(shard_dir=os.path.join(args.ckpt_dir or "data", f"shards-r{rank}") if args.shards else None,
               shards=args.shards)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank) if world > 1 else None
    dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=sampler is None,
                    num_workers=args.workers, timeout=60 if args.workers else 0,
                    multiprocessing_context=args.mp_context if args.workers else None)
    model = nn.Sequential(nn.Linear(32, args.hidden), nn.ReLU(), nn.Linear(args.hidden, 2))
    if world > 1:
        model = DDP(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, 20, 0.5)
    if args.noise:
        # a classic harmless warning: scheduler stepped before the optimizer
        sched.step()
    start = 0
    if args.resume:
        log(f"resuming from {args.resume}")
        st = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        start = st["step"]
    cache = []
    step = start
    lossf = nn.CrossEntropyLoss()
    it = None
    for epoch in range(args.epochs):
        if sampler:
            sampler.set_epoch(epoch)
        bar = dl
        if args.use_tqdm and rank == 0:
            from tqdm import tqdm
            bar = tqdm(dl, total=min(len(dl), args.steps - step), desc=f"epoch {epoch}", file=sys.stderr,
                       mininterval=0.5)
        for x, y in bar:
            if step >= args.steps:
                break
            out = model(x)
            loss = lossf(out, y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            step += 1
            if args.grow_mb:
                cache.append(torch.empty(int(args.grow_mb * 1024 * 1024 / 4)).fill_(1.0))
            if step % 5 == 0:
                msg = f"epoch={epoch} step={step} loss={loss.item():.4f} lr={sched.get_last_lr()[0]:.2e}"
                if args.use_tqdm and rank == 0:
                    bar.set_postfix(loss=f"{loss.item():.4f}")
                else:
                    log(msg)
                if args.metrics_file and rank == 0:
                    with open(args.metrics_file, "a") as f:
                        f.write(msg + "\n")
            if args.ckpt_dir and step % args.ckpt_every == 0:
                save_ckpt(args, model.module if world > 1 else model, opt, step, rank, log)
            time.sleep(args.step_sleep)
        if step >= args.steps:
            break
    log(f"training finished at step {step}")
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()
