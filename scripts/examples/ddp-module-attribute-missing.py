#!/usr/bin/env python
"""Real example logs for `ddp-module-attribute-missing` (new entry).

After wrapping in DistributedDataParallel the script still calls a custom method of
the model on the wrapper ("'DistributedDataParallel' object has no attribute ...").
positive-1 (torchrun, 2 ranks): model.config; positive-2 (single process, DataParallel):
model.generate_samples.
Run: .venv/bin/python scripts/examples/ddp-module-attribute-missing.py
"""
ID = "ddp-module-attribute-missing"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = {"hidden": 16, "vocab": 50}
            self.body = nn.Linear(16, 16)

        def forward(self, x):
            return self.body(x)

        def generate_samples(self, n):
            return self.body(torch.randn(n, 16))

    if mode == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")
        model = nn.parallel.DistributedDataParallel(Net())
        for step in range(1, 3):
            model(torch.randn(4, 16)).sum().backward()
            print(f"[rank{dist.get_rank()}] step {step} done", flush=True)
        print(f"saving checkpoint with hidden={model.config['hidden']}", flush=True)   # BUG: model.module.config
    else:
        model = nn.DataParallel(Net())
        print("epoch 1 finished, sampling 4 examples for the report", flush=True)
        model.generate_samples(4)                                                   # BUG: model.module.generate_samples


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "ddp", nproc=2)
    run("positive-2.log", "single")
