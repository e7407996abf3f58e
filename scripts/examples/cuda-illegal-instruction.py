#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cuda-illegal-instruction/positive-1.log: a real `torchrun` run (gloo, CPU).

Rank 1 dies with `torch.AcceleratorError: CUDA error: an illegal instruction was encountered` (PyTorch >= 2.8 wording).

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/CUDA print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cuda-illegal-instruction.py
"""

from __future__ import annotations

from _runner import MEGATRON_LINE, raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = 1
FAIL_STEP = 23
ERROR = "CUDA error: an illegal instruction was encountered\nSearch for `cudaErrorIllegalInstruction' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
EXC = torch.AcceleratorError
''', steps=30, every=1, progress=MEGATRON_LINE)


if __name__ == "__main__":
    torchrun_example("cuda-illegal-instruction", WORKER, port=29653, project="/workspace/moe-train")
