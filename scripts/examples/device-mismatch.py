#!/usr/bin/env python
"""Real example log for `device-mismatch` (positive-1).

No GPU here, so the CUDA forms (positive-2/3/4) are written from the PyTorch source
formats. positive-1 is real: the model was materialised on the "meta" device (as with
init_empty_weights / device="meta" construction) while the batch is on the CPU, and
F.linear refuses to mix devices ("Tensor on device meta is not on the expected device cpu!").
Run: .venv/bin/python scripts/examples/device-mismatch.py
"""
ID = "device-mismatch"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    with torch.device("meta"):
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))   # BUG: never materialised
    print("model built with empty weights (device=meta) to save host memory", flush=True)
    print("loading batch 0 on cpu", flush=True)
    model(torch.randn(4, 16)).sum().backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
