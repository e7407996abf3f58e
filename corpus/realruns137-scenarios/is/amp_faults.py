"""Mixed-precision (bf16/fp16) training on CPU with DDP; flags select a fault.

--fault:
  none          healthy bf16 autocast run (GradScaler constructed with enabled=True on CPU, noisy warnings)
  bf16-mm       autocast output (bf16) fed to a fp32 projection outside the autocast region on --fault-rank
  scaler-half   model.half() + GradScaler('cpu') -> unscale of FP16 gradients
  mask-fill     model.half(); attention mask filled with -1e9 (does not fit fp16)
  half-nan      model.half() with a large learning rate, loss goes inf/nan; stop on non-finite
  half-adamw    model.half() trained with plain AdamW (no autocast, no master weights)
"""
import argparse
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--compile-model", action="store_true")
p.add_argument("--ddp-find-unused", type=int, default=1)
args = p.parse_args()

if "RANK" in os.environ:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1


def log(msg):
    print(f"[rank{rank}] {time.strftime('%H:%M:%S')} {msg}", flush=True)


torch.manual_seed(0)
VOCAB, D, H = 101, 64, 4


class TinyAttn(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(VOCAB, D)
        self.qkv = nn.Linear(D, 3 * D)
        self.o = nn.Linear(D, D)
        self.head = nn.Linear(D, VOCAB)
        self.aux_proj = nn.Linear(D, D)  # fp32 auxiliary projection used for a regulariser
        self.register_buffer("decor_basis", torch.linalg.qr(torch.randn(D, D))[0])  # fixed fp32 basis

    def forward(self, x):
        B, T = x.shape
        h = self.emb(x)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        att = (q @ k.transpose(-1, -2)) / (D ** 0.5)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), 1)
        if args.fault == "mask-fill":
            att = att.masked_fill(mask, -1e9)
        else:
            att = att.masked_fill(mask, float("-inf"))
        a = self.o(att.softmax(-1) @ v)
        h = h + a
        return self.head(h), a


model = TinyAttn()
dtype_ctx = torch.bfloat16
if args.fault in ("scaler-half", "mask-fill", "half-nan", "half-cdist", "half-adamw"):
    model = model.half()
    dtype_ctx = torch.float16
if world > 1:
    model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=bool(args.ddp_find_unused))
core = model.module if world > 1 else model
fwd = torch.compile(model, backend="aot_eager") if args.compile_model else model

opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9) if args.fault in ("half-nan", "half-cdist") \
    else torch.optim.AdamW(model.parameters(), lr=args.lr)
scaler = torch.amp.GradScaler("cpu", enabled=args.fault in ("none", "scaler-half"))
if args.fault == "none-legacy":  # code written for the GPU cluster, run on a CPU box
    scaler = torch.cuda.amp.GradScaler()
log(f"world={world} amp dtype={dtype_ctx} param dtype={next(model.parameters()).dtype} "
    f"scaler_enabled={scaler.is_enabled()} fault={args.fault}")

gen = torch.Generator().manual_seed(42 + rank)
for step in range(args.steps):
    x = torch.randint(0, VOCAB, (8, 24), generator=gen)
    y = torch.roll(x, -1, 1)
    use_autocast = args.fault not in ("scaler-half", "mask-fill", "half-nan", "half-cdist", "half-adamw")
    ctx = torch.cpu.amp.autocast(dtype=dtype_ctx) if args.fault == "none-legacy" else \
        torch.autocast("cpu", dtype=dtype_ctx, enabled=use_autocast)
    with ctx:
        logits, hidden = fwd(x)
        loss = F.cross_entropy(logits.float().reshape(-1, VOCAB), y.reshape(-1))
    if args.fault == "bf16-mm" and step >= args.fault_step and (args.fault_rank < 0 or rank == args.fault_rank):
        # feature-decorrelation regulariser switched on after warm-up (computed outside autocast)
        z = hidden.float() @ core.aux_proj.weight.t()
        loss = loss + 1e-3 * (z.pow(2).mean())
    if args.fault == "bf16-buffer" and step >= args.fault_step and (args.fault_rank < 0 or rank == args.fault_rank):
        # decorrelation penalty in a fixed basis, enabled after warm-up (outside the autocast block)
        z = torch.mm(hidden.reshape(-1, D), core.decor_basis)
        loss = loss + 1e-3 * (z.pow(2).mean())
    if args.fault == "half-cdist" and step >= args.fault_step:
        # prototype-separation loss (enabled after warm-up): keep token prototypes apart
        protos = core.head.weight[:16]
        dist_mat = torch.cdist(hidden.reshape(-1, D)[:16], protos)
        loss = loss + 1e-2 * F.relu(1.0 - dist_mat).mean()
    if args.fault == "half-nan":
        loss = loss * 64.0  # effective sum over a 64-token window
    opt.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    lv = loss.item()
    log(f"step {step} loss {lv:.4f} scale {scaler.get_scale() if scaler.is_enabled() else 1.0}")
    if args.fault == "half-nan" and not torch.isfinite(loss):
        raise FloatingPointError(f"non-finite loss {lv} at step {step}; aborting run")

log("done")
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
