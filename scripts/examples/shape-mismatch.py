#!/usr/bin/env python
"""Real example logs for `shape-mismatch`.

positive-1: the image size changed from 32 to 28 so the classifier's in_features
(computed for 32x32) no longer matches ("mat1 and mat2 shapes cannot be multiplied").
positive-2 (torchrun): an attention mask built for max_length=64 is added to scores of
a 128-token batch ("The size of tensor a (128) must match the size of tensor b (64)").
Run: .venv/bin/python scripts/examples/shape-mismatch.py
"""
ID = "shape-mismatch"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode == "single":
        model = nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                              nn.Flatten(), nn.Linear(16 * 16 * 16, 10))   # sized for 32x32 input
        opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        print("Train Epoch: 1 [0/60000 (0%)]", flush=True)
        x, y = torch.randn(64, 1, 28, 28), torch.randint(0, 10, (64,))      # MNIST is 28x28
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        rank = dist.get_rank()
        max_length = 64
        mask = torch.zeros(1, 1, max_length, max_length)
        q = nn.Linear(32, 32)
        for step in range(1, 4):
            seq = 48 if step < 3 else (128 if rank == 0 else 48)   # rank 0 gets a long sample
            h = torch.randn(2, 4, seq, 8)
            scores = h @ h.transpose(-1, -2) / 8 ** 0.5
            scores = scores + mask[..., :seq, :seq] if seq <= max_length else scores + mask
            print(f"step {step} seq_len={seq} attn ok", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
