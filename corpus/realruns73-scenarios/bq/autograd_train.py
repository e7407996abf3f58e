"""Training with a hand-written autograd.Function (fused linear + scaled activation) and a
torch.library custom op (rms-norm style op), optionally DDP (gloo) and torch.compile.

--fault:
  none         healthy
  grad-count   backward returns 2 grads but forward got 3 inputs (forgot the `scale` input)
  grad-shape   backward returns the bias gradient without reducing over the batch dim
  inplace      caller applies an in-place activation to the tensor the Function saved for backward
  no-fake      custom op has no fake (meta) implementation; model is torch.compile'd
  no-autograd  custom op registered without register_autograd, used on tensors requiring grad
Fault applies on --fault-rank only (-1 = every rank) from --fault-step on.
"""
import argparse
import datetime
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--compile", action="store_true")
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--monitored-barrier", action="store_true")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--legacy-amp", action="store_true")
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)


def fault_on(step):
    return args.fault_rank in (-1, rank) and step >= args.fault_step


STATE = {"step": 0}


class FusedLinearAct(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, w, b, scale):
        z = x @ w.t() + b
        ctx.save_for_backward(x, w, z, scale)
        return torch.tanh(z) * scale

    @staticmethod
    def backward(ctx, g):
        x, w, z, scale = ctx.saved_tensors
        gt = g * scale * (1 - torch.tanh(z) ** 2)
        gx = gt @ w
        gw = gt.t() @ x
        gb = gt.sum(0)
        gscale = (g * torch.tanh(z)).sum().reshape(scale.shape)
        if args.fault == "grad-shape" and fault_on(STATE["step"]):
            gb = gt.t()  # per-sample bias grads (d, batch), never reduced
        if args.fault == "grad-count" and fault_on(STATE["step"]):
            return gx, gw, gb
        return gx, gw, gb, gscale


@torch.library.custom_op("bqlib::rms_scale", mutates_args=())
def rms_scale(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


if args.fault != "no-fake":
    @rms_scale.register_fake
    def _(x, eps):
        return torch.empty_like(x)


def _rms_setup(ctx, inputs, output):
    x, eps = inputs
    ctx.save_for_backward(x)
    ctx.eps = eps


def _rms_backward(ctx, g):
    (x,) = ctx.saved_tensors
    with torch.enable_grad():
        xx = x.detach().requires_grad_()
        y = xx * torch.rsqrt(xx.pow(2).mean(-1, keepdim=True) + ctx.eps)
        (gx,) = torch.autograd.grad(y, xx, g)
    return gx, None


if args.fault != "no-autograd":
    rms_scale.register_autograd(_rms_backward, setup_context=_rms_setup)


class Net(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.inp = nn.Linear(16, d)
        self.w = nn.Parameter(torch.randn(d, d) * 0.1)
        self.b = nn.Parameter(torch.zeros(d))
        self.scale = nn.Parameter(torch.ones(1))
        self.out = nn.Linear(d, 3)

    def forward(self, x):
        h = self.inp(x)
        a = rms_scale(h, 1e-6)
        h = FusedLinearAct.apply(a, self.w, self.b, self.scale)
        if args.fault == "inplace" and fault_on(STATE["step"]):
            a += h  # in-place residual (saves a copy)
            return self.out(a)
        return self.out(h)


torch.manual_seed(0)
model = Net()
if distributed:
    model = nn.parallel.DistributedDataParallel(model, find_unused_parameters=args.find_unused)
fwd = torch.compile(model) if args.compile else model
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
g = torch.Generator().manual_seed(rank)

it = range(args.steps)
if args.logfmt == "tqdm":
    from tqdm import tqdm
    it = tqdm(it, desc=f"[rank{rank}] epoch 0", file=sys.stdout, mininterval=0)

for step in it:
    STATE["step"] = step
    x = torch.randn(8, 16, generator=g)
    y = torch.randint(0, 3, (8,), generator=g)
    if args.legacy_amp:
        with torch.cuda.amp.autocast(dtype=torch.bfloat16):
            loss = nn.functional.cross_entropy(fwd(x), y)
    else:
        loss = nn.functional.cross_entropy(fwd(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if args.monitored_barrier and distributed:
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
    if args.logfmt == "tqdm":
        it.set_postfix(loss=f"{loss.item():.3f}")
    else:
        log(f"step {step} loss {loss.item():.4f} lr 0.05")
    time.sleep(0.1)

if distributed:
    dist.barrier()
    dist.destroy_process_group()
log("finished")
