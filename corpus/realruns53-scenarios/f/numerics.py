"""Tiny DDP classifier training used to reproduce numeric failures.

--fault selects a bug; --fault-rank / --fault-step select where it shows up.
"""
import argparse
import logging
import math
import os
import sys
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--num-classes", type=int, default=10)
p.add_argument("--in-dim", type=int, default=32)
p.add_argument("--logfmt", default="print")  # print | logging | tqdm
p.add_argument("--amp", default="none")  # none | bf16 | fp16
p.add_argument("--anomaly", type=int, nargs="?", const=1, default=0)
p.add_argument("--ddp", type=int, default=1)
args = p.parse_args()

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")


def out(msg):
    if args.logfmt == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


distributed = args.ddp and "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

torch.manual_seed(0)
if args.anomaly == 2:
    _anomaly = torch.autograd.detect_anomaly()  # debugging leftover, kept on for the whole run
    _anomaly.__enter__()
elif args.anomaly:
    torch.autograd.set_detect_anomaly(True)


class Net(nn.Module):
    def __init__(self, in_dim, nc):
        super().__init__()
        self.fc1 = nn.Linear(in_dim, 64)
        self.fc2 = nn.Linear(64, nc)
        self.scale = nn.Parameter(torch.ones(64))

    def forward(self, x, mask=None):
        h = F.relu(self.fc1(x))
        if args.fault == "sqrt_where":
            # "safe" norm: sqrt only where positive -- gradient of sqrt(0) is inf, masked -> nan
            s = (h * h).sum(-1, keepdim=True)
            if rank == args.fault_rank and step_now[0] >= args.fault_step:
                s = s * 0.0
            n = torch.where(s > 0, torch.sqrt(s), torch.zeros_like(s))
            h = h / (n + 1.0)
        if mask is not None:
            h = h.masked_fill(mask, -1e9)
        h = h * self.scale
        return self.fc2(h)


step_now = [0]
model = Net(args.in_dim, args.num_classes)
if args.fault == "half_params":
    model = model.half()  # "save memory": params in fp16, then GradScaler below
if args.fault == "half_mask":
    model = model.half()
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
scaler = None
if args.amp == "fp16" or args.fault in ("half_params", "scale_collapse", "spike_once"):
    scaler = torch.amp.GradScaler("cpu", init_scale=2.0 ** 16)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)

gen = torch.Generator().manual_seed(1234 + rank)
W_true = torch.randn(args.in_dim, args.num_classes, generator=torch.Generator().manual_seed(7))

it = range(args.steps)
if args.logfmt == "tqdm":
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", disable=False, file=sys.stderr, mininterval=0)

out(f"[rank{rank}] world={world} params={sum(p.numel() for p in model.parameters())} lr={args.lr} amp={args.amp}")
min_scale = 1e-4
for step in it:
    step_now[0] = step
    hit = rank == args.fault_rank and step >= args.fault_step
    in_dim = args.in_dim
    if args.fault == "feat_dim" and hit:
        in_dim = args.in_dim + 16  # shard written by the new feature extractor
    x = torch.randn(16, in_dim, generator=gen)
    if x.shape[1] == args.in_dim:
        y = (x @ W_true).argmax(-1)
    else:
        y = torch.randint(0, args.num_classes, (16,), generator=gen)
    if args.fault == "spike_once" and step == args.fault_step and rank == args.fault_rank:
        x = x * 1e36  # first shard was written before normalisation was added
    if args.fault == "label_oob" and hit:
        y = y + 1  # labels in the shard are 1-based
    if args.fault == "label_int32":
        y = y.to(torch.int32)  # labels read from an int32 numpy column
    dtype = torch.float16 if args.fault in ("half_params", "half_mask") else torch.float32
    x = x.to(dtype)
    mask = None
    if args.fault == "half_mask":
        mask = torch.zeros(16, 64, dtype=torch.bool)
        mask[:, -4:] = True
    ctx = torch.autocast("cpu", dtype=torch.bfloat16) if args.amp == "bf16" else torch.autocast("cpu", enabled=False)
    with ctx:
        logits = model(x, mask)
        if args.fault == "log_zero":
            probs = F.softmax(logits.float(), -1)
            if hit:
                probs = probs * (torch.arange(args.num_classes) != y[:, None]).float()  # prob of label underflows
            loss = -torch.log(probs.gather(1, y[:, None])).mean()
        elif args.fault == "div_count":
            valid = (y != -100).float()
            if hit:
                valid = valid * 0  # whole batch is padding on this shard
                y = torch.full_like(y, -100)
            per = F.cross_entropy(logits.float(), y, reduction="none", ignore_index=-100)
            loss = per.sum() / valid.sum()
        elif args.fault == "bce_shape":
            loss = F.binary_cross_entropy_with_logits(logits[:, :1], (y % 2).float())
        else:
            loss = F.cross_entropy(logits.float(), y)
    if args.fault == "bf16_head" and hit:
        # auxiliary decorrelation penalty added after the autocast block (fp32 projection buffer)
        proj = torch.randn(args.num_classes, 4, generator=gen)
        loss = loss + 0.01 * (logits @ proj).pow(2).mean()
    if args.fault == "scale_collapse" and hit:
        loss = loss * float("inf") if step % 1 == 0 else loss
    if args.fault == "lr_blowup" and step == args.fault_step:
        for g in opt.param_groups:
            g["lr"] = args.lr * 1e6  # warmup bug: multiplies instead of divides
    opt.zero_grad(set_to_none=True)
    if scaler is not None:
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        prev = scaler.get_scale()
        scaler.step(opt)
        scaler.update()
        cur = scaler.get_scale()
        if cur < prev:
            out(f"[rank{rank}] step {step}: gradient overflow detected, skipping update; loss scale reduced to {cur}")
        if args.fault == "scale_collapse" and cur < min_scale:
            raise FloatingPointError(
                "Minimum loss scale reached ({}). Your loss is probably exploding. "
                "Try lowering the learning rate, using gradient clipping or increasing the batch size.".format(min_scale))
    else:
        loss.backward()
        if args.fault == "none_clip":
            gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
    sched.step()
    lv = loss.item()
    if args.fault == "skip_nonfinite" and step == args.fault_step and rank == args.fault_rank:
        lv = float("nan")
    if not math.isfinite(lv) and scaler is None:
        if args.fault == "skip_nonfinite":
            out(f"[rank{rank}] WARNING step {step}: non-finite loss {lv}, skipping batch")
            continue
        raise FloatingPointError(f"Loss is {lv}, stopping training")
    extra = f" scale={scaler.get_scale():.1f}" if scaler is not None else ""
    msg = f"[rank{rank}] step {step} loss {lv:.4f} lr {sched.get_last_lr()[0]:.5f}{extra}"
    if args.logfmt == "tqdm":
        it.set_postfix(loss=f"{lv:.4f}")
        if step % 4 == 0:
            it.write(msg, file=sys.stderr)
    else:
        out(msg)

if distributed:
    dist.barrier()
out(f"[rank{rank}] training finished, final loss {lv:.4f}")
if distributed:
    dist.destroy_process_group()
