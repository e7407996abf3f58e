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

from _runner import BIN, PY, TORCHRUN, run_logged

ID = "ninja-missing"
# PATH is only the venv's bin, which has no ninja (a fresh venv with just `pip install torch`).
ENV = {"PATH": str(BIN), "TORCH_EXTENSIONS_DIR": "{tmp}/ext"}

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


if __name__ == "__main__":
    files = {"csrc/fused_scale_add.cpp": OP, "train.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29741", "--tee", "3",
                                      "train.py", "torchrun"], files=files, env=ENV)
    run_logged(ID, "positive-2.log", [PY, "train.py", "plain"], files=files, env=ENV)
