#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cuda-launch-failure/positive-1.log: a real `torchrun` run (gloo, CPU).

Rank 1 of a 2-rank DDP job dies with `torch.AcceleratorError: CUDA error: unspecified launch failure` (PyTorch >= 2.8 wording, with the `Search for cudaErrorLaunchFailure` help line) after a few healthy steps; rank 0 then loses its gloo peer.

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/CUDA print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cuda-launch-failure.py
"""

from __future__ import annotations

from _runner import torchrun_example

WORKER = r'''
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.elastic.multiprocessing.errors import record

FAIL_RANK = 1
FAIL_STEP = 17
ERROR = "CUDA error: unspecified launch failure\nSearch for `cudaErrorLaunchFailure' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
EXC = torch.AcceleratorError


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


if __name__ == "__main__":
    torchrun_example("cuda-launch-failure", WORKER, port=29651, project="/workspace/llm-pretrain")
