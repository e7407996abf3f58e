"""DDP training of a tiny MLP whose activation is a custom C++ op JIT-built with
torch.utils.cpp_extension.load_inline.  Flags choose which real defect the
extension source / build configuration carries.

  --variant ok          correct extension (autograd via torch ops)
  --variant warn        correct but old-style code that triggers compiler warnings
  --variant scalar_t    kernel uses scalar_t outside AT_DISPATCH (compile error)
  --variant linklib     links against -lfastgelu_kernels that is not installed
  --variant rawkernel   raw pointer kernel, output has no grad_fn
  --variant workspace   kernel allocates a workspace sized B*H*H*seq (too big)
  --variant avx512fp16  fast path with AVX512-FP16 intrinsics (-mavx512fp16)
  --variant cuda        extension ships a .cu kernel (needs CUDA toolkit)
  --variant relsrc      load() with relative source path csrc/fused_act.cpp
"""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--variant", default="ok")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--build-on", default="all", choices=["all", "rank0"])
p.add_argument("--ext-name", default=None)
p.add_argument("--verbose-build", action="store_true")
p.add_argument("--log-fmt", action="store_true", help="python logging with timestamps")
p.add_argument("--seq", type=int, default=16)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--import-prebuilt", default=None, help="import a prebuilt fused_act_ok module from this dir (e.g. a vendored wheel) instead of JIT-building")
p.add_argument("--abi0", action="store_true", help="build with the pre-C++11 libstdc++ string ABI")
p.add_argument("--big-seq-rank", type=int, default=-1)
p.add_argument("--dup-ext", action="store_true", help="also load the optimizer-side extension")
args = p.parse_args()

distributed = "RANK" in os.environ
rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.log_fmt:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)

if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))

from torch.utils.cpp_extension import load_inline, load

CPP_OK = r"""
#include <torch/extension.h>
torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor bias) {
  TORCH_CHECK(x.size(-1) == bias.size(0), "fused_bias_gelu: bias/last-dim mismatch");
  auto y = x + bias;
  return 0.5 * y * (1.0 + torch::tanh(0.7978845608 * (y + 0.044715 * y * y * y)));
}
"""

CPP_WARN = r"""
#include <torch/extension.h>
torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor bias) {
  int unused_counter = 0;
  auto y = x + bias;
  float* p = y.data<float>();          // deprecated accessor
  for (int i = 0; i < y.numel(); i++) { // signed/unsigned compare
    (void)p;
  }
  return 0.5 * y * (1.0 + torch::tanh(0.7978845608 * (y + 0.044715 * y * y * y)));
}
"""

CPP_SCALAR_T = r"""
#include <torch/extension.h>
#include <cmath>
torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor bias) {
  auto y = torch::empty_like(x);
  const int64_t n = x.numel(), h = bias.numel();
  const scalar_t* xp = x.data_ptr<scalar_t>();
  const scalar_t* bp = bias.data_ptr<scalar_t>();
  scalar_t* yp = y.data_ptr<scalar_t>();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "fused_bias_gelu", [&] {
    for (int64_t i = 0; i < n; ++i) {
      scalar_t v = xp[i] + bp[i % h];
      yp[i] = 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    }
  });
  return y;
}
"""

CPP_RAW = r"""
#include <torch/extension.h>
#include <cmath>
torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor bias) {
  auto xc = x.contiguous();
  auto y = torch::empty_like(xc);
  const int64_t n = xc.numel(), h = bias.numel();
  AT_DISPATCH_FLOATING_TYPES(xc.scalar_type(), "fused_bias_gelu", [&] {
    const scalar_t* xp = xc.data_ptr<scalar_t>();
    const scalar_t* bp = bias.data_ptr<scalar_t>();
    scalar_t* yp = y.data_ptr<scalar_t>();
    for (int64_t i = 0; i < n; ++i) {
      scalar_t v = xp[i] + bp[i % h];
      yp[i] = 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)));
    }
  });
  return y;
}
"""

CPP_WORKSPACE = r"""
#include <torch/extension.h>
torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor bias) {
  // x: [B, S, H]; pairwise workspace for the smoothing term
  const int64_t B = x.size(0), S = x.size(1), H = x.size(2);
  auto ws = torch::empty({B, S, H, H * S}, x.options());
  ws.zero_();
  auto y = x + bias;
  return 0.5 * y * (1.0 + torch::tanh(0.7978845608 * (y + 0.044715 * y * y * y)))
         + 0.0 * ws.select(3, 0).sum(-1, true);
}
"""

CPP_AVX = r"""
#include <torch/extension.h>
#include <immintrin.h>
// fast path: bias add in half precision with AVX512-FP16, then GELU in fp32
torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor bias) {
  auto xh = x.contiguous().to(torch::kHalf);
  auto bh = bias.contiguous().to(torch::kHalf).repeat({x.numel() / bias.numel()});
  auto out = torch::empty_like(xh);
  const int64_t n = xh.numel();
  auto* a = reinterpret_cast<const _Float16*>(xh.data_ptr<at::Half>());
  auto* b = reinterpret_cast<const _Float16*>(bh.data_ptr<at::Half>());
  auto* o = reinterpret_cast<_Float16*>(out.data_ptr<at::Half>());
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m512h va = _mm512_loadu_ph(a + i);
    __m512h vb = _mm512_loadu_ph(b + i);
    _mm512_storeu_ph(o + i, _mm512_add_ph(va, vb));
  }
  for (; i < n; ++i) o[i] = a[i] + b[i];
  auto y = out.to(torch::kFloat) + 0 * x;   // keep graph to x for autograd
  return 0.5 * y * (1.0 + torch::tanh(0.7978845608 * (y + 0.044715 * y * y * y)));
}
"""

CU_SRC = r"""
#include <torch/extension.h>
__global__ void bias_gelu_kernel(const float* x, const float* b, float* y, int n, int h) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { float v = x[i] + b[i % h]; y[i] = 0.5f * v * (1.f + tanhf(0.7978845608f * (v + 0.044715f * v * v * v))); }
}
torch::Tensor fused_bias_gelu_cuda(torch::Tensor x, torch::Tensor bias) {
  auto y = torch::empty_like(x);
  int n = x.numel(), h = bias.numel();
  bias_gelu_kernel<<<(n + 255) / 256, 256>>>(x.data_ptr<float>(), bias.data_ptr<float>(), y.data_ptr<float>(), n, h);
  return y;
}
"""

DUP_SRC = r"""
#include <torch/extension.h>
#include <torch/library.h>
torch::Tensor fused_bias_gelu(torch::Tensor x, torch::Tensor bias) {
  auto y = x + bias;
  return 0.5 * y * (1.0 + torch::tanh(0.7978845608 * (y + 0.044715 * y * y * y)));
}
TORCH_LIBRARY(fastops, m) {
  m.def("fused_bias_gelu(Tensor x, Tensor bias) -> Tensor", &fused_bias_gelu);
}
"""
DUP_SRC2 = r"""
#include <torch/extension.h>
#include <torch/library.h>
torch::Tensor fused_scale_(torch::Tensor p, double s) { return p.mul_(s); }
TORCH_LIBRARY(fastops, m) {
  m.def("fused_scale_(Tensor(a!) p, float s) -> Tensor(a!)", &fused_scale_);
}
"""


def build():
    v = args.variant
    name = args.ext_name or f"fused_act_{v}"
    common = dict(verbose=args.verbose_build)
    if args.import_prebuilt:
        sys.path.insert(0, args.import_prebuilt)
        import importlib
        return importlib.import_module("fused_act_ok")
    if v in ("ok",):
        extra = ["-D_GLIBCXX_USE_CXX11_ABI=0"] if args.abi0 else []
        return load_inline(name, cpp_sources=CPP_OK, functions=["fused_bias_gelu"], extra_cflags=extra, **common)
    if v == "warn":
        return load_inline(name, cpp_sources=CPP_WARN, functions=["fused_bias_gelu"],
                           extra_cflags=["-Wall", "-Wextra", "-O2"], **common)
    if v == "scalar_t":
        return load_inline(name, cpp_sources=CPP_SCALAR_T, functions=["fused_bias_gelu"], **common)
    if v == "linklib":
        return load_inline(name, cpp_sources=CPP_OK, functions=["fused_bias_gelu"],
                           extra_ldflags=["-L/opt/fastgelu/lib", "-lfastgelu_kernels"], **common)
    if v == "rawkernel":
        return load_inline(name, cpp_sources=CPP_RAW, functions=["fused_bias_gelu"], **common)
    if v == "workspace":
        return load_inline(name, cpp_sources=CPP_WORKSPACE, functions=["fused_bias_gelu"], **common)
    if v == "avx512fp16":
        return load_inline(name, cpp_sources=CPP_AVX, functions=["fused_bias_gelu"],
                           extra_cflags=["-O2", "-mavx512f", "-mavx512fp16"], **common)
    if v == "cuda":
        return load_inline(name, cpp_sources="torch::Tensor fused_bias_gelu_cuda(torch::Tensor x, torch::Tensor bias);",
                           cuda_sources=CU_SRC, functions=["fused_bias_gelu_cuda"], **common)
    if v == "relsrc":
        return load(name, sources=["csrc/fused_act.cpp"], **common)
    if v == "dup":
        m1 = load_inline(name, cpp_sources=DUP_SRC, functions=["fused_bias_gelu"], **common)
        if args.dup_ext:
            load_inline(name + "_optim", cpp_sources=DUP_SRC2, functions=["fused_scale_"], **common)
        return m1
    raise SystemExit(f"unknown variant {v}")


log(f"building/loading C++ extension (variant={args.variant}, world={world})")
t0 = time.time()
if args.build_on == "rank0" and distributed:
    if rank == 0:
        ext = build()
    dist.barrier()
    if rank != 0:
        ext = build()
else:
    ext = build()
log(f"extension ready in {time.time()-t0:.1f}s: {ext.__file__ if hasattr(ext, '__file__') else ext}")

fn = getattr(ext, "fused_bias_gelu", None) or getattr(ext, "fused_bias_gelu_cuda", None)


class Block(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.fc1 = nn.Linear(h, h, bias=False)
        self.bias = nn.Parameter(torch.zeros(h))
        self.fc2 = nn.Linear(h, 1)

    def forward(self, x):
        return self.fc2(fn(self.fc1(x), self.bias))


torch.manual_seed(0)
model = Block(args.hidden)
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(1234 + rank)
seq = args.seq * (64 if rank == args.big_seq_rank else 1)
for step in range(args.steps):
    x = torch.randn(8, seq, args.hidden, generator=g)
    y = x.mean(-1, keepdim=True)
    out = model(x)
    loss = nn.functional.mse_loss(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0 or step == args.steps - 1:
        log(f"step {step:3d} loss {loss.item():.4f} lr 1.0e-03")
log("training finished")
if distributed:
    dist.destroy_process_group()
