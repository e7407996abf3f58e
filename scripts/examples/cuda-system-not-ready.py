#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cuda-system-not-ready/positive-1.log: a real `torchrun` run (gloo, CPU).

Every rank of an 8-GPU NVSwitch node fails CUDA initialisation with `Error 802: system not yet initialized` (c10/cuda/CUDAFunctions.cpp wording); the example runs 2 ranks.

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/CUDA print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cuda-system-not-ready.py
"""

from __future__ import annotations

from _runner import raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = -1
FAIL_STEP = 0
ERROR = 'Unexpected error from cudaGetDeviceCount(). Did you run some cuda functions before calling NumCudaDevices() that might have already set an error? Error 802: system not yet initialized'
EXC = RuntimeError
''', fail_at_init=True)


if __name__ == "__main__":
    torchrun_example("cuda-system-not-ready", WORKER, port=29661, project="/workspace/hgx-smoke")
