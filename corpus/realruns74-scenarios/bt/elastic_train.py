"""Tiny DDP regression trainer for torchrun elastic experiments (gloo, CPU).

Flags select the fault, the rank it hits and the step.
"""
import argparse
import logging
import os
import resource
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--data", default="/work/rr74/bt/data/train.pt")
p.add_argument("--ckpt-dir", default="")
p.add_argument("--save-every", type=int, default=5)
p.add_argument("--sleep", type=float, default=0.2)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--log-style", dest="log", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--noise", action="store_true")
p.add_argument("--barrier-every", type=int, default=0)
args = p.parse_args()

rank = int(os.environ["RANK"]) if "RANK" in os.environ else None
local_rank = int(os.environ.get("LOCAL_RANK", 0))

if args.log == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def say(msg):
    if args.log == "logging":
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank = dist.get_rank()
world = dist.get_world_size()
say(f"init done: world_size={world} local_rank={local_rank} "
    f"restart_count={os.environ.get('TORCHELASTIC_RESTART_COUNT')} host={os.uname().nodename}")

if args.noise:
    warnings.warn("torch.distributed: gloo backend selected, NCCL unavailable on this host; "
                  "falling back to CPU collectives (expect lower throughput)")
    if rank == 0:
        logging.getLogger("py.warnings")
        warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage "
                      "will be the only storage class.", UserWarning)

torch.manual_seed(0)
os.makedirs("/work/rr74/bt/pids", exist_ok=True)
with open(f"/work/rr74/bt/pids/rank{rank}.pid", "w") as f:
    f.write(str(os.getpid()))

if args.fault == "oom" and rank == args.fault_rank:
    # memory cap as a cgroup/ulimit on this worker would apply
    soft = 1_500 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (soft * 5 // 3, soft * 5 // 3))

if args.fault == "fd-leak" and rank == args.fault_rank:
    resource.setrlimit(resource.RLIMIT_NOFILE, (96, 96))

data = torch.load(args.data, weights_only=True)
X, Y = data["x"], data["y"]
if X.shape[0] == 0:
    raise ValueError("empty")
shard = torch.arange(rank, X.shape[0], world)
X, Y = X[shard], Y[shard]
say(f"loaded {args.data}: {tuple(X.shape)} samples on this rank")

model = nn.Sequential(nn.Linear(X.shape[1], args.hidden), nn.ReLU(), nn.Linear(args.hidden, 1))
opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
start = 0
ckpt_path = os.path.join(args.ckpt_dir, "last.pt") if args.ckpt_dir else ""
if ckpt_path and os.path.exists(ckpt_path):
    say(f"resuming from {ckpt_path}")
    ck = torch.load(ckpt_path, weights_only=True)
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optim"])
    start = ck["step"] + 1
    say(f"resumed at step {start}")

ddp = DDP(model)
lossf = nn.MSELoss()
rng = range(start, args.steps)
if args.log == "tqdm" and rank == 0:
    from tqdm import tqdm
    rng = tqdm(rng, desc="train", file=sys.stdout, mininterval=0, ncols=90)

open_shards = []
for step in rng:
    idx = torch.randint(0, X.shape[0], (args.batch,))
    xb, yb = X[idx], Y[idx]

    if rank == args.fault_rank and step == args.fault_step:
        if args.fault == "oom":
            # eval-time "full batch" pass without chunking
            big = X.repeat(20000, 1)
            xb = big
            yb = Y.repeat(20000, 1)
        elif args.fault == "kill-self":
            os.kill(os.getpid(), 9)
        elif args.fault == "hang":
            # waits for a marker produced by a preprocessing job that never runs
            while not os.path.exists("/work/rr74/bt/data/preproc.done"):
                time.sleep(1)
        elif args.fault == "metric-bug":
            stats = {"loss": 0.0}
            say(f"val: {stats['val_loss']:.4f}")
        elif args.fault == "nan":
            xb = xb.clone()
            xb[0, 0] = float("inf")
    if args.fault == "fd-leak" and rank == args.fault_rank:
        # re-open the shard every step and never close it
        for _ in range(8):
            open_shards.append(open(args.data, "rb"))

    out = ddp(xb)
    loss = lossf(out, yb)
    if not torch.isfinite(loss):
        raise FloatingPointError(f"loss is {loss.item()} at step {step} on rank {rank}")
    opt.zero_grad()
    loss.backward()
    opt.step()

    if args.fault == "collective" and step == args.fault_step:
        # per-rank histogram of targets; bins derived from local data range
        nb = int(Y.max().item() * 10) if rank == args.fault_rank else 8
        hist = torch.histc(Y, bins=max(nb, 1))
        dist.all_reduce(hist)
    if args.barrier_every and step % args.barrier_every == 0:
        dist.monitored_barrier(timeout=timedelta(seconds=15))

    lt = loss.detach().clone()
    dist.all_reduce(lt)
    lt /= world
    if rank == 0 and args.log != "tqdm":
        say(f"step {step} loss {lt.item():.4f} lr 1.0e-02")
    elif rank == 0:
        rng.set_postfix(loss=f"{lt.item():.4f}")
    if ckpt_path and rank == 0 and step % args.save_every == 0:
        tmp = ckpt_path
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step}, tmp)
    time.sleep(args.sleep)

dist.barrier()
say("training finished")
dist.destroy_process_group()
