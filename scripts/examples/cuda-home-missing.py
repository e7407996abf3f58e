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

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "cuda-home-missing"

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


def run(cmd: list[str], out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = pathlib.Path(tmp)
        (t / "csrc").mkdir()
        (t / "csrc" / "fused_ops.cpp").write_text("#include <torch/extension.h>\n")
        (t / "csrc" / "fused_rmsnorm_kernel.cu").write_text("__global__ void k() {}\n")
        (t / "setup.py").write_text(SETUP)
        (t / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1", TORCH_EXTENSIONS_DIR=f"{tmp}/ext")
        env.pop("CUDA_HOME", None)
        env.pop("CUDA_PATH", None)
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    run([str(VENV_BIN / "python"), "setup.py", "build_ext", "--inplace"], OUT / "positive-1.log")
    run([str(VENV_BIN / "torchrun"), "--nproc-per-node", "2", "--master-port", "29761", "--tee", "3",
         "train.py"], OUT / "positive-2.log")
