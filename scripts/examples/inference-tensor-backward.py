#!/usr/bin/env python
"""Real example logs for `inference-tensor-backward` (new entry).

Features (or a cached batch) were produced under torch.inference_mode() by a frozen
encoder and then fed to a trainable head: autograd cannot save inference tensors.
Run: .venv/bin/python scripts/examples/inference-tensor-backward.py
"""
ID = "inference-tensor-backward"
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
    encoder = nn.Sequential(nn.Linear(32, 64), nn.ReLU()).eval()
    head = nn.Linear(64, 3)
    if mode != "single":
        head = nn.parallel.DistributedDataParallel(head)
    opt = torch.optim.Adam(head.parameters(), lr=1e-3)
    print("precomputing frozen-encoder features for 256 samples", flush=True)
    with torch.inference_mode():                                # BUG: use torch.no_grad() here
        feats = encoder(torch.randn(256, 32))
    labels = torch.randint(0, 3, (256,))
    print("training linear probe", flush=True)
    for step in range(1, 3):
        sl = slice(32 * (step - 1), 32 * step)
        loss = nn.functional.cross_entropy(head(feats[sl]), labels[sl])
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
