#!/usr/bin/env python
"""Real example logs for `dtype-mismatch`.

positive-1: features built with torch.from_numpy-style float64 reach an fp32 Linear
("mat1 and mat2 must have the same dtype, but got Double and Float").
positive-2 (torchrun): the model was cast to bfloat16 but the conv input stays float32
("Input type (float) and bias type (c10::BFloat16) should be the same").
Run: .venv/bin/python scripts/examples/dtype-mismatch.py
"""
ID = "dtype-mismatch"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode == "single":
        model = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 1))
        opt = torch.optim.Adam(model.parameters(), lr=1e-3)
        print("loaded 4096 rows x 12 features from features.parquet", flush=True)
        for step in range(1, 3):
            x = torch.randn(64, 12, dtype=torch.float64)   # BUG: pandas/numpy float64 features
            y = torch.randn(64, 1)
            loss = nn.functional.mse_loss(model(x), y)
            loss.backward()
            opt.step()
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
        model = model.to(torch.bfloat16)                   # "bf16 training"
        model = nn.parallel.DistributedDataParallel(model)
        print(f"rank {dist.get_rank()}: model dtype {next(model.parameters()).dtype}", flush=True)
        x = torch.randn(4, 3, 32, 32)                      # BUG: input still float32
        model(x).float().sum().backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
