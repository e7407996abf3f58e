#!/usr/bin/env python
"""Real example logs for `dynamo-unsupported` (new entry).

torch.compile(fullgraph=True) on a forward that calls .item() and print(): Dynamo
cannot trace it into one graph and, with fullgraph=True, raises torch._dynamo.exc.Unsupported
instead of graph-breaking.
Run: .venv/bin/python scripts/examples/dynamo-unsupported.py
"""
ID = "dynamo-unsupported"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")

    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 16)

        def forward(self, x):
            h = self.fc(x)
            if mode == "single":
                print(f"debug: activation mean {h.mean()}")      # BUG: print inside a fullgraph region
            else:
                scale = h.abs().max().item()                     # BUG: data-dependent Python scalar
                if scale > 1.0:
                    h = h / scale
            return h

    model = torch.compile(Model(), backend="eager", fullgraph=True)
    print("compiling model with torch.compile(fullgraph=True) ...", flush=True)
    model(torch.randn(4, 16)).sum().backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
