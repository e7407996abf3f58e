"""Regenerate real examples for ninja-missing.

torch.utils.cpp_extension.load() JIT-builds a small C++ op at import time; PATH is reduced to
the venv's bin directory, which has no `ninja` binary (as in a fresh venv where only
`pip install torch` was run), so verify_ninja_availability() raises
"RuntimeError: Ninja is required to load C++ extensions (pip install ninja to get it)".

positive-1.log: torchrun, 2 ranks, `--tee 3`: both ranks JIT-load the op at import.
positive-2.log: plain `python train.py` with logging noise.

Run: .venv/bin/python scripts/examples/ninja-missing.py
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "ninja-missing"

OP = r'''
#include <torch/extension.h>
torch::Tensor fused_scale_add(torch::Tensor a, torch::Tensor b, double s) { return a + s * b; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("fused_scale_add", &fused_scale_add); }
'''

TRAIN = r'''
import logging, os, sys
import torch
from torch.utils.cpp_extension import load
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("ops")
if sys.argv[1] == "torchrun":
    import torch.distributed as dist
    dist.init_process_group("gloo")
    log.info("rank %d: compiling custom ops (first run may take a few minutes)", dist.get_rank())
else:
    log.info("compiling custom ops (first run may take a few minutes)")
fused = load(name="fused_scale_add", sources=["csrc/fused_scale_add.cpp"], verbose=True)
'''


def run(cmd: list[str], out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "csrc").mkdir()
        (pathlib.Path(tmp) / "csrc" / "fused_scale_add.cpp").write_text(OP)
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1", PATH=str(VENV_BIN),
                   TORCH_EXTENSIONS_DIR=f"{tmp}/ext")
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    run([str(VENV_BIN / "torchrun"), "--nproc-per-node", "2", "--master-port", "29741", "--tee", "3",
         "train.py", "torchrun"], OUT / "positive-1.log")
    run([str(VENV_BIN / "python"), "train.py", "plain"], OUT / "positive-2.log")
