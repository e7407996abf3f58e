#!/usr/bin/env python
"""Real example logs for `autograd-anomaly-nan`.

Training with torch.autograd.set_detect_anomaly(True): a log() over probabilities that
reach exactly 0 gives an inf forward value and a NaN gradient; anomaly mode names the
backward function and prints the forward traceback.
Run: .venv/bin/python scripts/examples/autograd-anomaly-nan.py
"""
ID = "autograd-anomaly-nan"
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
    if mode == "negative":
        model = nn.Linear(8, 4)
        opt = torch.optim.SGD(model.parameters(), lr=0.05)
        with torch.autograd.detect_anomaly():
            for step in range(1, 6):
                x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
                loss = nn.functional.cross_entropy(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
                print(f"step {step} loss {loss.item():.4f}", flush=True)
        print("done", flush=True)
        return
    torch.autograd.set_detect_anomaly(True)
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for step in range(1, 6):
        x, y = torch.randn(32, 8), torch.randint(0, 4, (32,))
        if step == 4:
            x[0] = 1e4                                   # one outlier sample saturates the softmax
        probs = model(x).softmax(-1)
        if mode == "single":
            loss = -(probs.log() * nn.functional.one_hot(y, 4)).sum(-1).mean()   # log(0) -> -inf
        else:
            loss = (probs.sqrt() - 0.5).pow(2).mean() + (probs - 1e-3).clamp(min=0).sqrt().mean()
            if step == 4:
                loss = loss + (probs[0, 0] - probs[0, 0].detach()).sqrt()       # sqrt(0) -> inf grad
        print(f"step {step} loss {loss.item():.4f}", flush=True)
        opt.zero_grad()
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
    # look-alike: anomaly detection enabled (warning) in a run whose gradients stay finite
    run("negative-1.log", "negative")
