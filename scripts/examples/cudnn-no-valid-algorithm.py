#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cudnn-no-valid-algorithm/positive-1.log: a real `torchrun` run (gloo, CPU).

Rank 1 fails a convolution with `RuntimeError: GET was unable to find an engine to execute this computation` (cuDNN v8 API path of PyTorch >= 1.13).

The launcher prefixes (`[rankN]:`), the Python traceback, the gloo errors on the
surviving ranks and torchrun's ChildFailedError report are all printed by the real
PyTorch installed in .venv. This machine has no GPU, so the failing rank raises the
exception type and text that PyTorch/cuDNN print for this failure (copied from the
framework source, see the entry's references) instead of hitting it on a device.

Usage: .venv/bin/python scripts/examples/cudnn-no-valid-algorithm.py
"""

from __future__ import annotations

from _runner import HF_TRAINER_LINE, raising_ddp_worker, torchrun_example

WORKER = raising_ddp_worker(r'''
FAIL_RANK = 1
FAIL_STEP = 2
ERROR = 'GET was unable to find an engine to execute this computation'
EXC = RuntimeError
''', progress=HF_TRAINER_LINE)


if __name__ == "__main__":
    torchrun_example("cudnn-no-valid-algorithm", WORKER, port=29662, project="/workspace/unet")
