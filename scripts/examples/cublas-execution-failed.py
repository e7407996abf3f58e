#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cublas-execution-failed/positive-1.log: a real `torchrun` run (gloo, CPU).

Rank 0 fails a bf16 GEMM with `RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx(...)`` in the PyTorch 2.x wording of at::cuda::blas::gemm.

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/cuBLAS print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cublas-execution-failed.py
"""

from __future__ import annotations

from _runner import HF_TRAINER_LINE, raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = 0
FAIL_STEP = 12
ERROR = 'CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx( handle, opa, opb, m, n, k, &falpha, a, CUDA_R_16BF, lda, b, CUDA_R_16BF, ldb, &fbeta, c, CUDA_R_16BF, ldc, compute_type, CUBLAS_GEMM_DEFAULT_TENSOR_OP)`'
EXC = RuntimeError
''', progress=HF_TRAINER_LINE)


if __name__ == "__main__":
    torchrun_example("cublas-execution-failed", WORKER, port=29655, project="/workspace/sft")
