#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cuda-misaligned-address/positive-1.log: a real `torchrun` run (gloo, CPU).

Rank 0 of a 2-rank job dies with `RuntimeError: CUDA error: misaligned address` in the PyTorch 2.1-2.7 wording (RuntimeError, no `Search for` line), without @record so torchrun prints no traceback in its report.

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/CUDA print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cuda-misaligned-address.py
"""

from __future__ import annotations

from _runner import HF_TRAINER_LINE, raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = 0
FAIL_STEP = 9
ERROR = 'CUDA error: misaligned address\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n'
EXC = RuntimeError
''', record=False, progress=HF_TRAINER_LINE)


if __name__ == "__main__":
    torchrun_example("cuda-misaligned-address", WORKER, port=29652, project="/workspace/finetune")
