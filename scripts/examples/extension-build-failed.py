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

from _runner import PY, TORCHRUN, run_logged

ID = "extension-build-failed"
ENV = {"TORCH_EXTENSIONS_DIR": "{tmp}/ext", "MAX_JOBS": "1"}

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


if __name__ == "__main__":
    bad = {"csrc/fused_adam.cpp": BAD, "train.py": TRAIN}
    good = {"csrc/fused_adam.cpp": GOOD, "train.py": TRAIN}
    run_logged(ID, "positive-1.log", [PY, "train.py", "plain"], files=bad, env=ENV, timeout=600)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29751",
                                      "train.py", "torchrun"], files=bad, env=ENV, timeout=600)
    run_logged(ID, "negative-1.log", [PY, "train.py", "plain"], files=good, env=ENV, timeout=600)
