#!/usr/bin/env python
"""Toy DDP trainer (gloo, CPU) with selectable real faults and log formats.

Launched by torchrun / python -m torch.distributed.run, by mp.spawn (--spawn N),
or by a plain per-rank wrapper that sets RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT.
"""
import argparse
import json
import logging
import math
import os
import resource
import signal
import socket
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--fault-step", type=int, default=12)
    p.add_argument("--logfmt", "--log", dest="log", default="plain", choices=["plain", "logging", "json"])
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--ckpt-dir", default="/work/rr91/dy/run/ckpt")
    p.add_argument("--resume", default="")
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--atomic-save", action="store_true",
                   help="serialise to memory, write <path>.tmp, then os.replace")
    p.add_argument("--mem-limit-mb", type=int, default=0)
    p.add_argument("--cpu-limit-s", type=int, default=0)
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--spawn", type=int, default=0)
    p.add_argument("--port", type=int, default=39400)
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--sleep", type=float, default=0.05)
    p.add_argument("--monitored-barrier", action="store_true")
    p.add_argument("--local-metrics", action="store_true",
                   help="log the local loss only (no metrics all_reduce)")
    return p.parse_args()


class JsonFormatter(logging.Formatter):
    def format(self, record):
        d = {
            "ts": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + ".%03dZ" % record.msecs,
            "level": record.levelname,
            "logger": record.name,
            "rank": int(os.environ.get("RANK", "0")),
            "host": socket.gethostname(),
            "msg": record.getMessage(),
        }
        if record.exc_info:
            d["exc_info"] = self.formatException(record.exc_info)
        return json.dumps(d)


def setup_logging(kind, rank):
    log = logging.getLogger("trainer")
    if log.handlers:
        return log
    log.setLevel(logging.INFO)
    h = logging.StreamHandler(sys.stdout)
    if kind == "json":
        h.setFormatter(JsonFormatter())
        logging.captureWarnings(True)
        wl = logging.getLogger("py.warnings")
        wl.addHandler(h)
    elif kind == "logging":
        h.setFormatter(logging.Formatter(
            "%(asctime)s %(levelname)-7s [rank%(rank)s] %(name)s:%(lineno)d %(message)s"))
        h.addFilter(lambda r: setattr(r, "rank", rank) or True)
    else:
        h.setFormatter(logging.Formatter("%(message)s"))
    log.addHandler(h)
    log.propagate = False
    return log


class Net(nn.Module):
    def __init__(self, d_in=16, hidden=64, n_cls=4):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.head = nn.Linear(hidden, n_cls)
        self.aux_head = nn.Linear(hidden, 1)

    def forward(self, x):
        h = F.gelu(self.fc1(x))
        h = F.gelu(self.fc2(h))
        return self.head(h), self.aux_head(h)


def make_shard(rank, n=512, d_in=16, fault=None, fault_rank=-1):
    g = torch.Generator().manual_seed(1234 + rank)
    x = torch.randn(n, d_in, generator=g)
    w = torch.randn(d_in, 4, generator=torch.Generator().manual_seed(7))
    y = (x @ w).argmax(1)
    if fault == "nan-data" and rank == fault_rank:
        # a feature column with missing values that became NaN on export
        x[300:310, 5] = float("nan")
    return x, y


def run(rank, world, args):
    log = setup_logging(args.log, rank)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=timedelta(seconds=args.timeout))
    torch.manual_seed(0)
    log.info(f"rank {rank}/{world} initialised on {socket.gethostname()} pid={os.getpid()} "
             f"torch={torch.__version__}")

    hidden = args.hidden
    if args.fault == "model-mismatch" and rank == args.fault_rank:
        # this node picked up a stale config file with a different width
        hidden = args.hidden * 2
    model = Net(hidden=hidden)

    if args.resume:
        log.info(f"resuming from {args.resume}")
        state = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(state["model"])

    ddp = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=args.steps)
    if args.fault == "onecycle":
        # total_steps from the loader length of one epoch (epochs factor forgotten)
        sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=512 // 32)
    if args.fault == "sched-order":
        sched.step()

    x, y = make_shard(rank, fault=args.fault, fault_rank=args.fault_rank)
    bs = 32
    nb = x.shape[0] // bs

    if args.mem_limit_mb and rank == args.fault_rank:
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        resource.setrlimit(resource.RLIMIT_AS, (args.mem_limit_mb * 1024 * 1024, hard))
        log.info(f"applied address-space limit {args.mem_limit_mb} MiB (RLIMIT_AS) on rank {rank}")

    if args.cpu_limit_s and rank == args.fault_rank:
        soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
        resource.setrlimit(resource.RLIMIT_CPU, (args.cpu_limit_s, hard))
        log.info(f"rank {rank}: CPU-time budget {args.cpu_limit_s}s (RLIMIT_CPU)")

    it = range(args.steps)
    if args.tqdm:
        from tqdm import tqdm
        it = tqdm(it, desc=f"rank{rank}", disable=False, mininterval=0.0, ncols=90)

    history = []
    for step in it:
        i = step % nb
        xb, yb = x[i * bs:(i + 1) * bs], y[i * bs:(i + 1) * bs]
        # aux loss warm-down: this rank reads its schedule from a per-node override
        aux_weight = 0.1
        if args.fault == "unused" and rank == args.fault_rank and step >= args.fault_step:
            aux_weight = 0.0
        if args.fault == "shape" and rank == args.fault_rank and step == args.fault_step:
            # feature pipeline on this rank appends a one-hot "domain" column at epoch boundary
            xb = torch.cat([xb, torch.ones(xb.shape[0], 1)], dim=1)
        if args.fault == "nan-data":
            xb = x[(step * 29) % (x.shape[0] - bs):][:bs]
            yb = y[(step * 29) % (x.shape[0] - bs):][:bs]
        if args.fault == "hang" and rank == args.fault_rank and step == args.fault_step \
                and not args.monitored_barrier:
            # waits for a sentinel file the launcher never writes
            while not os.path.exists("/work/rr91/dy/run/never-created.flag"):
                time.sleep(0.5)
        out, aux = ddp(xb)
        loss = F.cross_entropy(out, yb)
        if aux_weight > 0:
            loss = loss + aux_weight * aux.pow(2).mean()
        if args.fault == "nan-check" or args.fault == "nan-data":
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"Loss is {loss.item()} at step {step} on rank {rank}, stopping training")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        sched.step()

        if args.fault == "oom" and rank == args.fault_rank and step == args.fault_step:
            # "keep activations for the eval report": materialise features for the full epoch
            feats = torch.empty(nb * 2048, 4096)
            history.append(feats)

        if args.fault == "collective" and step == args.fault_step:
            # per-class accuracy tensor: rank 1 sees fewer classes in its shard
            n_cls = int(yb.max().item()) + 1 if rank == args.fault_rank else 4
            acc = torch.zeros(n_cls + (1 if rank == args.fault_rank else 0))
            dist.all_reduce(acc)

        if args.fault == "keyerror" and rank == args.fault_rank and step == args.fault_step:
            metrics = {"loss": loss.item(), "grad_norm": gn.item()}
            log.info(f"step {step} eval ppl {math.exp(metrics['val_loss']):.3f}")

        lt = loss.detach().clone()
        if args.local_metrics:
            lt *= world
        else:
            dist.all_reduce(lt)
        if rank == 0 or args.log != "plain":
            msg = f"step {step:4d} | loss {lt.item()/world:.4f} | grad_norm {gn.item():.3f} | lr {sched.get_last_lr()[0]:.2e}"
            if args.tqdm:
                it.set_postfix(loss=f"{lt.item()/world:.3f}")
                if step % 10 == 0 and rank == 0:
                    it.write(msg)
            else:
                log.info(msg)
        if args.save_every and (step + 1) % args.save_every == 0 and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step+1}.pt")
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1}
            if args.atomic_save:
                import io
                buf = io.BytesIO()
                torch.save(state, buf)
                with open(path + ".tmp", "wb") as fh:
                    fh.write(buf.getvalue())
                os.replace(path + ".tmp", path)
            else:
                torch.save(state, path)
            log.info(f"saved checkpoint {path}")
        if args.monitored_barrier and step % 5 == 4:
            if args.fault == "hang" and rank == args.fault_rank and step == args.fault_step:
                # rank writes an eval report to a lock-protected shared file before syncing
                while not os.path.exists("/work/rr91/dy/run/never-created.flag"):
                    time.sleep(0.5)
            dist.monitored_barrier(timeout=timedelta(seconds=10))
        time.sleep(args.sleep)

    dist.barrier()
    log.info(f"rank {rank} finished {args.steps} steps")
    dist.destroy_process_group()


def spawn_entry(rank, world, args):
    os.environ["RANK"] = str(rank)
    run(rank, world, args)


def main():
    args = parse()
    if args.spawn:
        import torch.multiprocessing as mp
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        mp.spawn(spawn_entry, args=(args.spawn, args), nprocs=args.spawn, join=True)
        return
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if args.log == "json":
        log = setup_logging("json", rank)
        try:
            run(rank, world, args)
        except Exception:
            logging.getLogger("trainer").exception("training failed")
            raise
    else:
        run(rank, world, args)


if __name__ == "__main__":
    main()
