#!/usr/bin/env python
"""Real example logs for `inplace-modification`.

A residual block applies `out += identity` to the output of a Sigmoid gate (which
autograd saved for SigmoidBackward), so backward finds the tensor at version 1.
positive-2 runs with torch.autograd.set_detect_anomaly(True) under torchrun, which adds
the forward traceback ("Error detected in SigmoidBackward0").
Run: .venv/bin/python scripts/examples/inplace-modification.py
"""
ID = "inplace-modification"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    ddp = mode == "ddp"
    if ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        torch.autograd.set_detect_anomaly(True)

    class GatedBlock(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.proj = nn.Linear(d, d)
            self.gate = nn.Linear(d, d)

        def forward(self, x):
            out = torch.sigmoid(self.gate(x))
            out *= self.proj(x)          # BUG: in-place on a tensor saved for SigmoidBackward
            return out + x

    model = nn.Sequential(nn.Linear(16, 32), GatedBlock(32), nn.Linear(32, 4))
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print("epoch 0: 128 batches, batch_size=32", flush=True)
    for step in range(1, 4):
        x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        print(f"step {step} forward done, loss={loss.item():.4f}", flush=True)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
