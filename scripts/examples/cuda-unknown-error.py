#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cuda-unknown-error/positive-1.log: a real `torchrun` run (gloo, CPU).

Both ranks fail CUDA initialisation with `RuntimeError: CUDA unknown error - this may be due to an incorrectly set up environment, ...` (c10/cuda/CUDAFunctions.cpp, cudaErrorUnknown from cudaGetDeviceCount).

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/CUDA print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cuda-unknown-error.py
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "src/traintriage/kb/examples/cuda-unknown-error/positive-1.log"
TORCHRUN = Path(sys.executable).with_name("torchrun")
NPROC = 2

WORKER = r'''
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record

FAIL_RANK = -1
FAIL_STEP = 0
ERROR = 'CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.'
EXC = RuntimeError


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(64, 64)

    def forward(self, x: torch.Tensor, step: int) -> torch.Tensor:
        if dist.get_rank() == FAIL_RANK and step == FAIL_STEP:
            # What the CUDA/cuBLAS/cuDNN check raises on the GPU at this point.
            raise EXC(ERROR)
        return torch.relu(self.proj(x))


@record
def main() -> None:
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(Block())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if FAIL_RANK < 0 or rank == FAIL_RANK:
        torch.zeros(1)  # model.to(device) / torch.cuda.set_device(local_rank) happens here on a GPU node
        raise EXC(ERROR)

    for step in range(1, 40 + 1):
        x = torch.randn(32, 64)
        loss = model(x, step).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        if rank == 0 and step % 5 == 0:
            print(f"step {step}/{40} | loss {loss.item():.4f} | lr 3.0e-04 | grad_norm {1.0 + step / 100:.3f}", flush=True)
        time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="tt-example-") as tmp:
        script = Path(tmp) / "train.py"
        script.write_text(WORKER)
        env = dict(os.environ, PYTHONWARNINGS="ignore", PYTHONUNBUFFERED="1")
        proc = subprocess.run(
            [str(TORCHRUN), "--nproc_per_node", str(NPROC), "--master_port", "29657", str(script)],
            cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300,
        )
        text = proc.stdout.replace(tmp, "/workspace/train")
    # The CPU-only venv warns that NumPy is absent; that line is about this machine, not the run.
    text = "\n".join(l for l in text.splitlines() if "Failed to initialize NumPy" not in l
                     and "_conversion_method_template" not in l) + "\n"
    text = re.sub(r"/tmp/torchelastic_[a-z0-9_]+", "/tmp/torchelastic_run", text)
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text('' + text)
    print(f"wrote {OUT} ({len(text.splitlines())} lines, torchrun exit {proc.returncode})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
