#!/usr/bin/env python
"""Real example logs for `fp16-value-overflow` (new entry).

An attention mask filled with a hard-coded -1e9 (or torch.finfo(torch.float32).min)
in a model running in float16: the constant is outside the half range (max 65504).
Run: .venv/bin/python scripts/examples/fp16-value-overflow.py
"""
ID = "fp16-value-overflow"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode != "single":
        import torch.distributed as dist
        dist.init_process_group("gloo")
    attn_in = nn.Linear(16, 16).half()
    print(f"loaded model in torch.float16, {sum(p.numel() for p in attn_in.parameters())} params", flush=True)
    x = torch.randn(2, 8, 16).half()
    scores = attn_in(x) @ x.transpose(1, 2)
    pad = torch.zeros(2, 8, 8, dtype=torch.bool)
    pad[:, :, 6:] = True
    if mode == "single":
        scores = scores.masked_fill(pad, -1e9)                     # BUG: use torch.finfo(scores.dtype).min
    else:
        scores.masked_fill_(pad, torch.finfo(torch.float32).min)   # same bug with the fp32 minimum
    print(scores.softmax(-1).shape, flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
