"""Small DDP (gloo, CPU) trainer used for the environment-failure scenarios.

Launched by torchrun (env://).  Flags select the environment-dependent behaviour:
  --data-dir      per-rank shards  shard_{rank:02d}.pt  (made with --prepare)
  --pidfile-dir   at --fault-step the --fault-rank writes its pid there (an outside
                  process then kills / stops it, as an operator or another job would)
  --cache-mb      at --fault-step every rank builds an in-memory feature cache of this size
  --ckpt-dir      rank 0 saves a checkpoint every --ckpt-every steps
  --monitored     use monitored_barrier between epochs
"""
import argparse
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def get_args():
    p = argparse.ArgumentParser()
    p.add_argument("--prepare", action="store_true")
    p.add_argument("--nshards", type=int, default=4)
    p.add_argument("--data-dir", default=None)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--step-sleep", type=float, default=0.05)
    p.add_argument("--fault-rank", type=int, default=-1)
    p.add_argument("--fault-step", type=int, default=-1)
    p.add_argument("--pidfile-dir", default=None)
    p.add_argument("--cache-mb", type=int, default=0)
    p.add_argument("--ckpt-dir", default=None)
    p.add_argument("--ckpt-every", type=int, default=10)
    p.add_argument("--monitored", action="store_true")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--log-style", choices=["print", "logging", "tqdm"], default="print")
    p.add_argument("--warn-noise", action="store_true")
    return p.parse_args()


def prepare(args):
    os.makedirs(args.data_dir, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    w = torch.randn(64, 10, generator=g)
    for r in range(args.nshards):
        x = torch.randn(2048, 64, generator=g)
        y = (x @ w).argmax(1)
        torch.save({"x": x, "y": y}, os.path.join(args.data_dir, f"shard_{r:02d}.pt"))
        print(f"wrote shard_{r:02d}.pt  ({x.shape[0]} samples)")


def main():
    args = get_args()
    if args.prepare:
        prepare(args)
        return

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    local_rank = int(os.environ.get("LOCAL_RANK", 0))

    if args.log_style == "logging":
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s",
        )
    log = logging.getLogger("train")

    def out(msg):
        if args.log_style == "logging":
            log.info(msg)
        else:
            print(f"[rank{rank}] {msg}", flush=True)

    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    out(f"initialized process group: world_size={world} local_rank={local_rank} "
        f"master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}")
    torch.manual_seed(1234)
    torch.set_num_threads(1)

    if args.data_dir:
        shard = os.path.join(args.data_dir, f"shard_{rank:02d}.pt")
        out(f"loading {shard}")
        data = torch.load(shard)
        x_all, y_all = data["x"], data["y"]
    else:
        g = torch.Generator().manual_seed(rank)
        x_all = torch.randn(2048, 64, generator=g)
        y_all = torch.randint(0, 10, (2048,), generator=g)

    model = nn.Sequential(nn.Linear(64, args.hidden), nn.GELU(), nn.Linear(args.hidden, args.hidden),
                          nn.GELU(), nn.Linear(args.hidden, 10))
    ddp = DDP(model, find_unused_parameters=args.warn_noise)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    lossf = nn.CrossEntropyLoss()

    if args.warn_noise:
        # config copied from the GPU recipe: AMP scaler requested, unused-parameter search on
        # (the scaler is a no-op on CPU; kept so the same config runs on GPU nodes)
        # (find_unused_parameters costs an extra graph traversal per step)
        # TODO: drop both once the CPU smoke-test config is split from the GPU one
        # (tracked in the infra backlog)
        scaler = torch.cuda.amp.GradScaler(enabled=True)

    bar = None
    if args.log_style == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps * args.epochs, desc="train", dynamic_ncols=False, ncols=100)

    n = x_all.shape[0]
    gstep = 0
    for epoch in range(args.epochs):
        for step in range(args.steps):
            gstep += 1
            if gstep == args.fault_step and rank == args.fault_rank and args.pidfile_dir:
                with open(os.path.join(args.pidfile_dir, f"rank{rank}.pid"), "w") as f:
                    f.write(str(os.getpid()))
            if gstep == args.fault_step and args.cache_mb:
                out(f"building feature cache ({args.cache_mb} MB) for hard-example mining")
                cache = torch.empty(args.cache_mb * 1024 * 1024 // 4, dtype=torch.float32)
                cache.fill_(0.0)
                out(f"feature cache ready: {cache.numel()} floats")
            i = (gstep * args.batch) % (n - args.batch)
            xb, yb = x_all[i:i + args.batch], y_all[i:i + args.batch]
            loss = lossf(ddp(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if args.step_sleep:
                time.sleep(args.step_sleep)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
            elif gstep % 5 == 0:
                out(f"epoch {epoch} step {gstep}/{args.steps * args.epochs} loss {loss.item():.4f} "
                    f"lr {opt.param_groups[0]['lr']:.1e}")
            if args.ckpt_dir and rank == 0 and gstep % args.ckpt_every == 0:
                os.makedirs(args.ckpt_dir, exist_ok=True)
                path = os.path.join(args.ckpt_dir, f"step_{gstep:05d}.pt")
                torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": gstep}, path)
                out(f"saved checkpoint {path} ({os.path.getsize(path) / 2**20:.1f} MB)")
        if args.monitored:
            dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)
        else:
            dist.barrier()
        out(f"epoch {epoch} done")
    if bar is not None:
        bar.close()
    t = torch.tensor([loss.item()])
    dist.all_reduce(t)
    out(f"training finished, mean final loss {t.item() / world:.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
