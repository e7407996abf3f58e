#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cublas-alloc-failed/positive-1.log: a real `torchrun` run (gloo, CPU).

Rank 1 fails its first GEMM with `RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`` (the cuBLAS handle is created lazily on the first matmul, with no memory left on the device).

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/cuBLAS print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cublas-alloc-failed.py
"""

from __future__ import annotations

from _runner import raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = 1
FAIL_STEP = 1
ERROR = 'CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`'
EXC = RuntimeError
''')


if __name__ == "__main__":
    torchrun_example("cublas-alloc-failed", WORKER, port=29654, project="/workspace/vision")
