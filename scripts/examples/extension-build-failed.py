"""Regenerate real examples for extension-build-failed.

torch.utils.cpp_extension.load() JIT-builds a fused-Adam-style op whose source includes
<cuda_runtime.h>; the CPU build of the op does not put the CUDA include directory on the
compiler's path, so g++ stops with "fatal error: cuda_runtime.h: No such file or directory",
ninja prints "ninja: build stopped: subcommand failed." and torch raises
"RuntimeError: Error building extension 'fused_adam'" (the real compiler and ninja run here).

positive-1.log: plain `python train.py`, verbose build output.
positive-2.log: torchrun, 2 ranks: the ranks race for the build lock; the one that builds
  fails with the compiler error; torchrun reports ChildFailedError.
negative-1.log: the same op builds and loads fine (verbose ninja output, "Loading extension
  module fused_adam..."), then training runs to completion.

Run: .venv/bin/python scripts/examples/extension-build-failed.py
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "extension-build-failed"

BAD = r'''
#include <cuda_runtime.h>
#include <torch/extension.h>
void multi_tensor_adam(torch::Tensor p, torch::Tensor g, double lr) { p.add_(g, -lr); }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("multi_tensor_adam", &multi_tensor_adam); }
'''
GOOD = BAD.replace("#include <cuda_runtime.h>\n", "")

TRAIN = r'''
import logging, os, sys
import torch
from torch.utils.cpp_extension import load
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("optim")
if sys.argv[1] == "torchrun":
    import torch.distributed as dist
    dist.init_process_group("gloo")
    log.info("rank %d: building fused_adam op", dist.get_rank())
else:
    log.info("building fused_adam op")
fused_adam = load(name="fused_adam", sources=["csrc/fused_adam.cpp"], verbose=True)
model = torch.nn.Linear(16, 4)
for step in range(1, 4):
    loss = model(torch.randn(8, 16)).pow(2).mean()
    loss.backward()
    for p in model.parameters():
        fused_adam.multi_tensor_adam(p.data, p.grad, 1e-2)
        p.grad = None
    log.info("step %d loss %.4f", step, loss.item())
'''


def run(cmd: list[str], out: pathlib.Path, src: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "csrc").mkdir()
        (pathlib.Path(tmp) / "csrc" / "fused_adam.cpp").write_text(src)
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1", TORCH_EXTENSIONS_DIR=f"{tmp}/ext", MAX_JOBS="1")
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    run([str(VENV_BIN / "python"), "train.py", "plain"], OUT / "positive-1.log", BAD)
    run([str(VENV_BIN / "torchrun"), "--nproc-per-node", "2", "--master-port", "29751",
         "train.py", "torchrun"], OUT / "positive-2.log", BAD)
    run([str(VENV_BIN / "python"), "train.py", "plain"], OUT / "negative-1.log", GOOD)
