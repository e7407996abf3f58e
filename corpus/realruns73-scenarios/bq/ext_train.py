"""Tiny DDP training job that JIT-builds a C++ extension (fused bias+relu and a gather op) on every rank.

--fault selects what goes wrong:
  none          healthy (verbose build, -Wall warnings)
  syntax        C++ source has a typo -> build fails on all ranks
  undefined     helper declared but never defined -> ImportError undefined symbol
  segv          gather kernel has no bounds check; rank --fault-rank gets a bad index at --fault-step
  abi0          extra_cflags -D_GLIBCXX_USE_CXX11_ABI=0 (old-ABI wheel flags)
  march         extra_cflags -march=bdver1 copied from an old build script (FMA4 on Intel)
  missing-src   load() from a source file path that does not exist
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
from torch.utils.cpp_extension import load, load_inline

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--verbose-build", action="store_true")
p.add_argument("--ext-name", default="fused_ops")
p.add_argument("--rank0-builds-first", action="store_true")
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

CPP = r"""
#include <torch/extension.h>
#include <vector>

torch::Tensor fused_bias_relu(torch::Tensor x, torch::Tensor b) {
  auto y = x + b;
  return y.clamp_min(0);
}

torch::Tensor gather_rows(torch::Tensor table, torch::Tensor idx) {
  // fast path: no bounds checking, caller guarantees 0 <= idx < table.size(0)
  auto t = table.contiguous();
  auto i = idx.contiguous();
  int64_t n = i.size(0), d = t.size(1);
  auto out = torch::empty({n, d}, t.options());
  const float* tp = t.data_ptr<float>();
  const int64_t* ip = i.data_ptr<int64_t>();
  float* op = out.data_ptr<float>();
  for (int64_t r = 0; r < n; ++r) {
    const float* src = tp + ip[r] * d;
    for (int64_t c = 0; c < d; ++c) op[r * d + c] = src[c];
  }
  return out;
}

float dot_fma(torch::Tensor a, torch::Tensor b) {
  const float* ap = a.data_ptr<float>();
  const float* bp = b.data_ptr<float>();
  float acc[8] = {0};
  int64_t n = a.numel();
  for (int64_t k = 0; k + 8 <= n; k += 8)
    for (int j = 0; j < 8; ++j) acc[j] = __builtin_fmaf(ap[k + j], bp[k + j], acc[j]);
  float s = 0; for (int j = 0; j < 8; ++j) s += acc[j];
  int unused_counter = 0;
  return s;
}
"""

CPP_SYNTAX = CPP.replace("auto y = x + b;", "auto y = x + b")
CPP_UNDEF = CPP.replace("torch::Tensor fused_bias_relu(torch::Tensor x, torch::Tensor b) {\n  auto y = x + b;\n  return y.clamp_min(0);\n}",
                        "torch::Tensor bias_act_impl(torch::Tensor x, torch::Tensor b, double slope);\n"
                        "torch::Tensor fused_bias_relu(torch::Tensor x, torch::Tensor b) {\n  return bias_act_impl(x, b, 0.0);\n}")

FUNCS = ["fused_bias_relu", "gather_rows", "dot_fma"]


def build():
    name = args.ext_name
    cflags = ["-O3", "-Wall"]
    src = CPP
    if args.fault == "syntax":
        src = CPP_SYNTAX
    elif args.fault == "undefined":
        src = CPP_UNDEF
    elif args.fault == "abi0":
        # flags copied from a build script written for the old pre-cxx11-ABI wheels
        src = CPP.replace("  auto t = table.contiguous();", '  TORCH_CHECK(table.dim() == 2, "gather_rows: table must be 2-D, got ", table.sizes());\n  auto t = table.contiguous();')
        cflags = ["-O3", "-D_GLIBCXX_USE_CXX11_ABI=0"]
    elif args.fault == "march":
        cflags = ["-O3", "-march=bdver1", "-ffast-math"]
    if args.fault == "missing-src":
        here = os.path.dirname(os.path.abspath(__file__))
        return load(name=name, sources=[os.path.join(here, "csrc", "fused_ops.cpp")],
                    extra_cflags=cflags, verbose=args.verbose_build)
    return load_inline(name=name, cpp_sources=[src], functions=FUNCS,
                       extra_cflags=cflags, verbose=args.verbose_build)


t0 = time.time()
log(f"building/loading C++ extension '{args.ext_name}' (world={world})")
if args.rank0_builds_first and distributed:
    if rank == 0:
        ext = build()
    dist.barrier()
    if rank != 0:
        ext = build()
else:
    ext = build()
log(f"extension ready in {time.time() - t0:.1f}s: {ext.__file__}")


class FusedBiasReLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, b):
        y = ext.fused_bias_relu(x, b)
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        gx = g * (y > 0)
        return gx, gx.sum(0)


class Net(nn.Module):
    def __init__(self, vocab=64, d=32):
        super().__init__()
        self.table = nn.Parameter(torch.randn(vocab, d) * 0.1)
        self.lin = nn.Linear(d, d, bias=False)
        self.bias = nn.Parameter(torch.zeros(d))
        self.head = nn.Linear(d, 4)

    def forward(self, idx):
        with torch.no_grad():
            rows = ext.gather_rows(self.table.detach(), idx)
        h = rows + self.table[idx] - self.table[idx].detach()
        h = FusedBiasReLU.apply(self.lin(h), self.bias)
        return self.head(h)


torch.manual_seed(0)
model = Net()
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
g = torch.Generator().manual_seed(100 + rank)

it = range(args.steps)
if args.logfmt == "tqdm":
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank}", file=sys.stdout, mininterval=0)

for step in it:
    idx = torch.randint(0, 64, (16,), generator=g)
    if args.fault == "segv" and rank == args.fault_rank and step == args.fault_step:
        # token id from a corrupted shard: sentinel -1 cast through uint32 in the preprocessing
        idx[5] = 4294967295 * 4096
    y = torch.randint(0, 4, (16,), generator=g)
    out = model(idx)
    loss = nn.functional.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    chk = ext.dot_fma(torch.ones(64), torch.full((64,), 0.5))
    msg = f"step {step} loss {loss.item():.4f} chk {chk:.1f}"
    if args.logfmt == "tqdm":
        it.set_postfix(loss=f"{loss.item():.4f}")
        if step % 4 == 0:
            it.write(f"[rank{rank}] {msg}")
    else:
        log(msg)
    time.sleep(0.2)

if distributed:
    dist.barrier()
    dist.destroy_process_group()
log("training finished")
