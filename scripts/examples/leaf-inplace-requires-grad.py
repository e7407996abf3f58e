#!/usr/bin/env python
"""Real example logs for `leaf-inplace-requires-grad` (new entry).

positive-1: custom weight init writes into an nn.Parameter in place outside
torch.no_grad() ("a leaf Variable that requires grad is being used in an in-place operation.").
positive-2 (torchrun): zeroing the padding row of an embedding by indexing the parameter
("a view of a leaf Variable that requires grad is being used in an in-place operation.").
Run: .venv/bin/python scripts/examples/leaf-inplace-requires-grad.py
"""
ID = "leaf-inplace-requires-grad"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import math

    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(100, 16)
            self.w = nn.Parameter(torch.empty(16, 16))
            self.reset_parameters()

        def reset_parameters(self):
            if mode == "single":
                self.w.uniform_(-1 / math.sqrt(16), 1 / math.sqrt(16))   # BUG: needs torch.no_grad()
            else:
                self.embed.weight[0].zero_()                            # BUG: padding row, same problem

    print("building model ...", flush=True)
    if mode != "single":
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model = Net()
    print("model ready", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
