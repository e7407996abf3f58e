"""Tiny DDP regression trainer launched by torchrun / python -m torch.distributed.run / by hand (env://).

--fault selects a start-up / process-group problem on --fault-rank at --fault-step.
"""
import argparse
import json
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--backend", default="gloo")
p.add_argument("--init-method", default=None)
p.add_argument("--config", default="configs/run.json")
p.add_argument("--preprocess-seconds", type=float, default=0.0)
p.add_argument("--log", action="store_true", help="python logging with timestamps")
p.add_argument("--noise", action="store_true", help="print warnings / metric lines")
p.add_argument("--sleep", type=float, default=0.2)
args = p.parse_args()

if args.log:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.log:
        log.info(msg)
    else:
        print(msg, flush=True)


rank_env = int(os.environ.get("RANK", "0"))
local_rank = int(os.environ.get("LOCAL_RANK", "0"))


def load_config():
    with open(args.config) as f:
        return json.load(f)


def data_prep():
    # pretend tokenisation / shard indexing that takes a while on some hosts
    if args.preprocess_seconds:
        say(f"[rank{rank_env}] building shard index ...")
        time.sleep(args.preprocess_seconds)
        say(f"[rank{rank_env}] shard index ready")


def main():
    if args.noise:
        warnings.warn("torch.backends.cudnn settings ignored: CUDA not available, running on CPU",
                      UserWarning)
    if args.fault == "crash-before-init" and rank_env == args.fault_rank:
        cfg = load_config()  # path only exists on the head node
    else:
        cfg = {"lr": 0.05, "hidden": 32}
    if args.fault == "slow-init" and rank_env == args.fault_rank:
        data_prep()

    say(f"[rank{rank_env}] init_process_group(backend={args.backend}) "
        f"MASTER_ADDR={os.environ.get('MASTER_ADDR')} MASTER_PORT={os.environ.get('MASTER_PORT')} "
        f"WORLD_SIZE={os.environ.get('WORLD_SIZE')}"
        + (f" init_method={args.init_method}" if args.init_method else ""))
    kw = dict(backend=args.backend, timeout=timedelta(seconds=args.timeout))
    if args.init_method:
        kw["init_method"] = args.init_method
        kw["rank"] = rank_env
        kw["world_size"] = int(os.environ["WORLD_SIZE"])
    dist.init_process_group(**kw)
    rank, world = dist.get_rank(), dist.get_world_size()
    say(f"[rank{rank}] process group ready: world_size={world}")

    if args.fault == "double-init":
        # helper module "initialises distributed if needed" but checks the wrong env var
        if os.environ.get("DIST_INITIALIZED") != "1":
            dist.init_process_group(backend=args.backend, timeout=timedelta(seconds=args.timeout))

    if args.fault == "new-group-subset":
        # evaluation group created only on the ranks that run eval
        if rank < 2:
            say(f"[rank{rank}] creating eval group [0, 1]")
            eval_group = dist.new_group(ranks=[0, 1])
        else:
            eval_group = None

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, cfg["hidden"]), nn.ReLU(), nn.Linear(cfg["hidden"], 1))
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=cfg["lr"])
    g = torch.Generator().manual_seed(100 + rank)
    x = torch.randn(256, 16, generator=g)
    y = x[:, :1] * 0.7 - x[:, 1:2] * 0.3

    if args.fault == "monitored-barrier":
        if rank == args.fault_rank:
            data_prep()
        say(f"[rank{rank}] waiting at monitored_barrier before training")
        dist.monitored_barrier(timeout=timedelta(seconds=args.timeout))

    for step in range(args.steps):
        if (args.fault == "pidfile" and rank == args.fault_rank and step == args.fault_step
                and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"):
            # external watchdog (node health checker) reads this and may kill us
            with open(os.environ["TRAIN_PIDFILE"], "w") as f:
                f.write(str(os.getpid()))
        if args.fault == "destroy-early" and rank == args.fault_rank and step == args.fault_step:
            # "cleanup" placed inside the loop by mistake
            say(f"[rank{rank}] step {step}: cleaning up")
            dist.destroy_process_group()
        idx = torch.randint(0, 256, (32,), generator=g)
        loss = nn.functional.mse_loss(ddp(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        t = loss.detach().clone()
        dist.all_reduce(t)
        if rank == 0:
            say(f"step {step} loss {t.item() / world:.4f}")
            if args.noise and step % 3 == 0:
                say(f"metrics: step={step} lr={cfg['lr']} grad_norm="
                    f"{sum(p.grad.norm() ** 2 for p in model.parameters()).sqrt().item():.3f} "
                    f"samples/s={32 * world / args.sleep:.1f}")
        time.sleep(args.sleep)

    if args.fault == "exit-early" and rank == args.fault_rank:
        say(f"[rank{rank}] training done, exiting")
        sys.exit(0)
    # final evaluation sync
    ev = torch.tensor([float(rank)])
    dist.all_reduce(ev)
    dist.barrier()
    if rank == 0:
        say(f"final eval sync ok ({ev.item()})")
    dist.destroy_process_group()
    say(f"[rank{rank}] done")


if __name__ == "__main__":
    main()
