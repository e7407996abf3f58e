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

from _runner import raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = -1
FAIL_STEP = 0
ERROR = 'CUDA unknown error - this may be due to an incorrectly set up environment, e.g. changing env variable CUDA_VISIBLE_DEVICES after program start. Setting the available devices to be zero.'
EXC = RuntimeError
''', fail_at_init=True)


if __name__ == "__main__":
    torchrun_example("cuda-unknown-error", WORKER, port=29657, project="/workspace/train")
