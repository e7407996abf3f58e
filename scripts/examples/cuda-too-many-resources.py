#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cuda-too-many-resources/positive-1.log: a real `torchrun` run (gloo, CPU).

Rank 1 dies with `torch.AcceleratorError: CUDA error: too many resources requested for launch` (PyTorch >= 2.8 wording) on its first step, in a custom kernel.

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/CUDA print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cuda-too-many-resources.py
"""

from __future__ import annotations

from _runner import raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = 1
FAIL_STEP = 1
ERROR = "CUDA error: too many resources requested for launch\nSearch for `cudaErrorLaunchOutOfResources' in https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.\nFor more detailed error information, run with CUDA_LOG_FILE=stderr\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
EXC = torch.AcceleratorError
''')


if __name__ == "__main__":
    torchrun_example("cuda-too-many-resources", WORKER, port=29659, project="/workspace/nerf")
