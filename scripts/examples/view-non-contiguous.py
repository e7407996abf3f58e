#!/usr/bin/env python
"""Real example logs for `view-non-contiguous`.

Multi-head attention merges heads with out.transpose(1, 2).view(B, T, C): after the
transpose the tensor is not contiguous, so view() cannot express it.
Run: .venv/bin/python scripts/examples/view-non-contiguous.py
"""
ID = "view-non-contiguous"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode == "negative":
        x = torch.randn(4, 8, 32)
        print("flattening patches for the classifier head", flush=True)
        x.view(4, 8 * 30)
        return
    ddp = mode == "ddp"
    if ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")

    class SelfAttention(nn.Module):
        def __init__(self, c=32, h=4):
            super().__init__()
            self.h, self.qkv, self.proj = h, nn.Linear(c, 3 * c), nn.Linear(c, c)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1) / (C // self.h) ** 0.5).softmax(-1)
            out = (att @ v).transpose(1, 2).view(B, T, C)      # BUG: needs .contiguous() or .reshape
            return self.proj(out)

    model = SelfAttention()
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    print("number of parameters: 0.00M", flush=True)
    print("compiling the model... (skipped: compile=False)", flush=True)
    model(torch.randn(4, 8, 32)).sum().backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    # look-alike: view() with a size that does not match numel (a shape bug, not contiguity)
    run("negative-1.log", "negative")
