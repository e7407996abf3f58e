#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cudnn-internal-error/positive-1.log: a real `torchrun` run (gloo, CPU).

Rank 1 fails a cuDNN call with `RuntimeError: cuDNN error: CUDNN_STATUS_INTERNAL_ERROR` (the AT_CUDNN_CHECK wording).

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/cuDNN print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cudnn-internal-error.py
"""

from __future__ import annotations

from _runner import raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = 1
FAIL_STEP = 3
ERROR = 'cuDNN error: CUDNN_STATUS_INTERNAL_ERROR'
EXC = RuntimeError
''', record=False)


if __name__ == "__main__":
    torchrun_example("cudnn-internal-error", WORKER, port=29656, project="/workspace/segmentation")
