"""Tiny DDP trainer used for start-up / environment failure scenarios.

Flags select the fault; the fault is an ordinary misconfiguration, not a raised exception.
"""
import argparse
import datetime
import glob
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def get_args(argv=None):
    p = argparse.ArgumentParser("ddp_env")
    p.add_argument("--backend", default="gloo")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=16)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--data-glob", default=None, help="glob of .pt shards; {rank} substituted")
    p.add_argument("--config", default=None, help="optional yaml-ish key=value config")
    p.add_argument("--out-dir", default=None)
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
    p.add_argument("--num-workers", type=int, default=0)
    p.add_argument("--init-twice", action="store_true", help="also call setup helper from trainer")
    p.add_argument("--sleep-per-step", type=float, default=0.05)
    return p.parse_args(argv)


log = logging.getLogger("train")


def setup_logging(style, rank):
    if style == "logging":
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s",
        )
    else:
        logging.basicConfig(level=logging.WARNING)


def out(style, msg):
    if style == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


def init_distributed(args):
    dist.init_process_group(
        backend=args.backend,
        timeout=datetime.timedelta(seconds=args.pg_timeout),
    )
    return dist.get_rank(), dist.get_world_size()


def read_config(path):
    cfg = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith("#"):
                k, v = line.split("=", 1)
                cfg[k.strip()] = v.strip()
    return cfg


def load_data(args, rank):
    if args.data_glob:
        pattern = args.data_glob.format(rank=rank)
        files = sorted(glob.glob(pattern)) if any(c in pattern for c in "*?[") else [pattern]
        xs, ys = [], []
        for fn in files:
            blob = torch.load(fn)
            xs.append(blob["x"])
            ys.append(blob["y"])
        if xs:
            x, y = torch.cat(xs), torch.cat(ys)
        else:
            x, y = torch.empty(0, 32), torch.empty(0, dtype=torch.long)
    else:
        g = torch.Generator().manual_seed(0)
        x = torch.randn(512, 32, generator=g)
        y = (x[:, :4].sum(1) > 0).long()
    return TensorDataset(x, y)


def main():
    args = get_args()
    rank_env = int(os.environ.get("RANK", "0"))
    setup_logging(args.log_style, rank_env)
    if args.config:
        cfg = read_config(args.config)
        args.lr = float(cfg.get("lr", args.lr))
    rank, world = init_distributed(args)
    if args.init_twice:
        # a helper in the trainer "makes sure" the process group exists
        init_distributed(args)
    out(args.log_style, f"rank {rank}/{world} initialised backend={dist.get_backend()} pid={os.getpid()}")
    torch.manual_seed(1234)
    model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
    ddp = DDP(model)
    ds = load_data(args, rank)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
    dl = DataLoader(ds, batch_size=args.batch_size, sampler=sampler, num_workers=args.num_workers)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr)
    lossf = nn.CrossEntropyLoss()
    step = 0
    it = range(args.steps)
    bar = None
    if args.log_style == "tqdm" and rank == 0:
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc="train", file=sys.stderr)
    epoch = 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        for xb, yb in dl:
            opt.zero_grad()
            loss = lossf(ddp(xb), yb)
            loss.backward()
            opt.step()
            step += 1
            time.sleep(args.sleep_per_step)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
            elif step % 5 == 0 and rank == 0:
                out(args.log_style, f"epoch {epoch} step {step} loss {loss.item():.4f}")
            if args.out_dir and args.save_every and step % args.save_every == 0 and rank == 0:
                os.makedirs(args.out_dir, exist_ok=True)
                path = os.path.join(args.out_dir, f"ckpt_step{step}.pt")
                torch.save({"model": model.state_dict(), "step": step}, path)
                out(args.log_style, f"saved {path}")
            if step >= args.steps:
                break
        epoch += 1
    if bar is not None:
        bar.close()
    dist.barrier()
    out(args.log_style, f"rank {rank} done, final loss {loss.item():.4f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
