"""Regenerate real examples for cuda-home-missing.

torch.utils.cpp_extension sets CUDA_HOME to None when it finds no CUDA toolkit (and, as on this
machine's CPU-only wheel, never looks for one), so the first CUDA-specific path lookup raises
the real "OSError: CUDA_HOME environment variable is not set. Please set it to your CUDA
install root." -- the same code path a runtime-only GPU container hits. CUDA_HOME/CUDA_PATH are
removed from the environment so nothing is picked up from the caller.

positive-1.log: `python setup.py build_ext --inplace` for a CUDAExtension.
positive-2.log: torchrun, 2 ranks, `--tee 3`: a training script JIT-loads a .cu op with
  torch.utils.cpp_extension.load() on every rank -> the same OSError per rank.
(negative-1.log is written by hand: the harmless "No CUDA runtime is found, using
CUDA_HOME=..." warning of a build host, which a CPU-only wheel never prints.)

Run: .venv/bin/python scripts/examples/cuda-home-missing.py
"""

from __future__ import annotations

from _runner import PY, TORCHRUN, run_logged

ID = "cuda-home-missing"

SETUP = r'''
from setuptools import setup
from torch.utils.cpp_extension import BuildExtension, CUDAExtension

setup(
    name="fused_ops",
    version="0.3.0",
    ext_modules=[CUDAExtension("fused_ops._C", ["csrc/fused_ops.cpp", "csrc/fused_rmsnorm_kernel.cu"])],
    cmdclass={"build_ext": BuildExtension},
)
'''

TRAIN = r'''
import logging, os
import torch
import torch.distributed as dist
from torch.utils.cpp_extension import load
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("model")
dist.init_process_group("gloo")
log.info("rank %d: JIT-compiling fused_rmsnorm (CUDA)", dist.get_rank())
fused = load(name="fused_rmsnorm", sources=["csrc/fused_ops.cpp", "csrc/fused_rmsnorm_kernel.cu"])
'''


FILES = {"csrc/fused_ops.cpp": "#include <torch/extension.h>\n",
         "csrc/fused_rmsnorm_kernel.cu": "__global__ void k() {}\n",
         "setup.py": SETUP, "train.py": TRAIN}
# nothing from the caller's CUDA install may be picked up
ENV = {"TORCH_EXTENSIONS_DIR": "{tmp}/ext", "CUDA_HOME": None, "CUDA_PATH": None}


if __name__ == "__main__":
    run_logged(ID, "positive-1.log", [PY, "setup.py", "build_ext", "--inplace"], files=FILES, env=ENV)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29761", "--tee", "3",
                                      "train.py"], files=FILES, env=ENV)
