#!/usr/bin/env python
"""Real example logs for `dynamo-recompile-limit`.

positive-1: a compiled model fed batches whose sequence length changes every step,
compiled with dynamic=False, so every new length is a new graph until Dynamo hits
config.recompile_limit (8) and falls back to eager for that frame (warning, run slows).
positive-2 (torchrun): the same with fullgraph=True, where the limit is a hard error.
negative-1: TORCH_LOGS=recompiles shows two legitimate recompiles, then a healthy run.
Run: .venv/bin/python scripts/examples/dynamo-recompile-limit.py
"""
ID = "dynamo-recompile-limit"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import time

    import torch
    import torch.nn as nn

    if mode == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
    compiled = torch.compile(model, backend="eager", dynamic=False, fullgraph=(mode == "ddp"))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lengths = [8, 8, 16, 8, 16] if mode == "negative" else list(range(8, 24))
    for step, seq in enumerate(lengths, 1):   # unpadded batches: a new sequence length each step
        t0 = time.time()
        loss = compiled(torch.randn(4, seq, 16)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step} seq_len {seq} loss {loss.item():.4f} step_time {1000 * (time.time() - t0):.0f}ms", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    run("negative-1.log", "negative", env={"TORCH_LOGS": "recompiles"})
