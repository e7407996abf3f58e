#!/usr/bin/env python
"""Real example logs for `grad-implicit-non-scalar` (new entry).

positive-1: the loss is built with reduction='none' (per-token weights applied later)
and .backward() is called on the vector ("grad can be implicitly created only for scalar outputs").
positive-2 (torchrun): a model returns a per-sample loss vector of shape [batch].
Run: .venv/bin/python scripts/examples/grad-implicit-non-scalar.py
"""
ID = "grad-implicit-non-scalar"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode == "single":
        model = nn.Linear(16, 5)
        crit = nn.CrossEntropyLoss(reduction="none")           # per-sample weights applied below
        for step in range(1, 3):
            x, y = torch.randn(32, 16), torch.randint(0, 5, (32,))
            w = torch.rand(32)
            loss = crit(model(x), y) * w                         # BUG: never reduced to a scalar
            print(f"step {step}: loss shape {tuple(loss.shape)}", flush=True)
            loss.backward()
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")

        class Regressor(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(8, 1)

            def forward(self, x, y):
                return (self.body(x).squeeze(-1) - y) ** 2       # per-sample loss, no .mean()

        model = nn.parallel.DistributedDataParallel(Regressor())
        print(f"[rank{dist.get_rank()}] epoch 0 start", flush=True)
        loss = model(torch.randn(16, 8), torch.randn(16))
        loss.backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
