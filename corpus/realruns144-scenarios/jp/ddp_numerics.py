"""Tiny DDP classifier/regressor used to reproduce loss-curve failures.

Flags select the data/config fault, the rank that carries it and the step.
"""
import argparse
import json
import logging
import math
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none",
               choices=["none", "inf_shard", "std0", "warmup_bug", "anomaly_sqrt",
                        "wrong_units", "skip_nonfinite", "spike_recover"])
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=20)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--optim", default="adam", choices=["adam", "sgd"])
p.add_argument("--task", default="cls", choices=["cls", "reg"])
p.add_argument("--style", default="print", choices=["print", "logging", "json", "kv", "megatron"])
p.add_argument("--nan-guard", default="exit", choices=["exit", "none"])
p.add_argument("--warmup", type=int, default=10)
p.add_argument("--every", type=int, default=2)
p.add_argument("--clip", type=float, default=float("inf"))
p.add_argument("--sleep", type=float, default=0.0)
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def emit(step, **m):
    if args.style == "print":
        print(f"[rank {rank}] step {step:4d} | " + " | ".join(
            f"{k} {v:.4f}" if isinstance(v, float) else f"{k} {v}" for k, v in m.items()), flush=True)
    elif args.style == "logging":
        log.info("step %d " % step + " ".join(f"{k}={v:.5g}" if isinstance(v, float) else f"{k}={v}"
                                            for k, v in m.items()))
    elif args.style == "json":
        print(json.dumps({"rank": rank, "step": step, **m}), flush=True)
    elif args.style == "kv":
        print(f"rank={rank} step={step} " + " ".join(
            f"{k}={v:.6g}" if isinstance(v, float) else f"{k}={v}" for k, v in m.items()), flush=True)
    elif args.style == "megatron":
        if rank == 0:
            print(f" iteration {step:8d}/{args.steps:8d} | consumed samples: {step*32*world:12d} | "
                  f"elapsed time per iteration (ms): {m.get('ms', 0.0):.1f} | learning rate: {m['lr']:.3E} | "
                  f"global batch size: {32*world:5d} | lm loss: {m['loss']:.6E} | loss scale: 1.0 | "
                  f"grad norm: {m['grad_norm']:.3f} | number of skipped iterations: {m.get('skipped', 0):3d} | "
                  f"number of nan iterations: {m.get('nan', 0):3d} |", flush=True)


torch.manual_seed(1234)  # same teacher on every rank
D, C = 16, 4
teacher = torch.randn(D, C)
g = torch.Generator().manual_seed(100 + rank)
N = 32 * args.steps
X = torch.randn(N, D, generator=g) * 3 + 5
if args.task == "cls":
    Y = (X @ teacher).argmax(1)
else:
    Y = (X @ teacher)[:, :1] + 0.1 * torch.randn(N, 1, generator=g)

bad = rank == args.bad_rank
if bad and args.fault in ("inf_shard", "skip_nonfinite", "spike_recover"):
    # a record in this shard was parsed from the CSV field "1e999"
    X[args.fault_step * 32 + 7, 3] = float("1e999")
if bad and args.fault == "std0":
    # sensor 5 is constant in this shard
    X[:, 5] = 2.0
if bad and args.fault == "wrong_units":
    Y = Y * 1000.0  # this shard stores the target in grams, not kilograms

# per-shard standardisation (computed locally, as the preprocessing script did)
mu, sd = X.mean(0), X.std(0)
if args.fault in ("inf_shard", "skip_nonfinite", "spike_recover"):
    finite = torch.isfinite(X).all(1)
    mu, sd = X[finite].mean(0), X[finite].std(0)
X = (X - mu) / sd

model = nn.Sequential(nn.Linear(D, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(),
                      nn.Linear(64, C if args.task == "cls" else 1))
if distributed:
    model = DDP(model)
opt = (torch.optim.Adam if args.optim == "adam" else torch.optim.SGD)(model.parameters(), lr=args.lr)
if args.fault == "warmup_bug":
    # linear warmup -- the min(1.0, ...) cap was dropped in a refactor
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / args.warmup)
else:
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / args.warmup))

if args.fault == "anomaly_sqrt":
    torch.autograd.set_detect_anomaly(True)

if rank == 0 and args.style != "megatron":
    print(f"world_size={world} fault-free config: lr={args.lr} optim={args.optim} steps={args.steps}", flush=True)
if args.style == "megatron" and rank == 0:
    print("> building train, validation, and test datasets ...", flush=True)
    print(f"training ...", flush=True)

skipped = 0
t0 = time.time()
for step in range(1, args.steps + 1):
    xb = X[(step - 1) * 32: step * 32]
    yb = Y[(step - 1) * 32: step * 32]
    out = model(xb)
    if args.task == "cls":
        loss = F.cross_entropy(out, yb)
    else:
        loss = F.mse_loss(out, yb)
    if args.fault == "anomaly_sqrt":
        # feature-spread regulariser: distance between the first two embeddings
        h = (model.module if distributed else model)[0](xb)
        if bad and step == args.fault_step:
            xb2 = xb.clone(); xb2[1] = xb2[0]  # duplicated record in the batch
            h = (model.module if distributed else model)[0](xb2)
        dist_ = torch.sqrt(((h[0] - h[1]) ** 2).sum())
        loss = loss + 0.01 * torch.exp(-dist_)

    loss_value = loss.item()
    if args.fault in ("skip_nonfinite", "spike_recover") and distributed:
        flag = torch.tensor([0.0 if math.isfinite(loss_value) else 1.0])
        dist.all_reduce(flag)
        if flag.item() > 0:
            skipped += 1
            if not math.isfinite(loss_value):
                print(f"[rank {rank}] WARNING: non-finite loss ({loss_value}) at step {step}, skipping batch", flush=True)
            else:
                print(f"[rank {rank}] WARNING: a peer reported a non-finite loss at step {step}, skipping batch", flush=True)
            opt.zero_grad(set_to_none=True)
            sched.step()
            continue
    if args.nan_guard == "exit" and not math.isfinite(loss_value):
        print("Loss is {}, stopping training".format(loss_value), flush=True)
        sys.exit(1)

    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = float(torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip))
    opt.step()
    sched.step()
    if args.sleep:
        time.sleep(args.sleep)
    if step % args.every == 0 or step == args.steps:
        ms = (time.time() - t0) * 1000 / step
        if args.style == "megatron":
            lt = torch.tensor([loss_value])
            if distributed:
                dist.all_reduce(lt)
                lt /= world
            emit(step, loss=float(lt), lr=sched.get_last_lr()[0], grad_norm=gn, ms=ms, skipped=skipped)
        else:
            emit(step, loss=loss_value, lr=sched.get_last_lr()[0], grad_norm=gn)

if rank == 0:
    print("training finished", flush=True)
if distributed:
    dist.barrier()
    dist.destroy_process_group()
