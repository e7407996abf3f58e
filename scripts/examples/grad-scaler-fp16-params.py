#!/usr/bin/env python
"""Real example logs for `grad-scaler-fp16-params`.

The model was cast with .half() and then trained with AMP's GradScaler: the gradients
are fp16, and GradScaler.unscale_ refuses them ("Attempting to unscale FP16 gradients.").
positive-1 uses the CPU GradScaler (the check is identical for torch.amp.GradScaler("cuda")).
Run: .venv/bin/python scripts/examples/grad-scaler-fp16-params.py
"""
ID = "grad-scaler-fp16-params"
# Run as a generator, this file copies itself to /tmp/tt-job/<ID>/train.py and re-executes
# it with TT_MODE set (_runner.self_runner): that copy is the user's training script.
import os
import sys


def train(mode: str) -> None:
    import torch
    import torch.nn as nn

    if mode == "negative":
        model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8))   # fp32 master weights
        opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
        scaler = torch.amp.GradScaler("cpu")
        print("Using mixed precision: fp16 (GradScaler enabled, init_scale=65536.0)", flush=True)
        for step in range(1, 6):
            with torch.autocast("cpu", dtype=torch.float16):
                loss = model(torch.randn(16, 32)).float().pow(2).mean()
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            scaler.step(opt)
            scaler.update()
            opt.zero_grad()
            print(f"{{'loss': {loss.item():.4f}, 'grad_norm': 0.5, 'learning_rate': 2e-05, 'epoch': 0.0{step}}}", flush=True)
        return
    ddp = mode == "ddp"
    if ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 8)).half()   # BUG: fp16 master weights
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=2e-5)
    scaler = torch.amp.GradScaler("cpu")
    print("Using mixed precision: fp16 (GradScaler enabled, init_scale=65536.0)", flush=True)
    for step in range(1, 3):
        x = torch.randn(16, 32).half()
        with torch.autocast("cpu", dtype=torch.float16):
            loss = model(x).float().pow(2).mean()
        scaler.scale(loss).backward()
        scaler.unscale_(opt)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(opt)
        scaler.update()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    from _runner import self_runner
    run = self_runner(ID, __file__)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    # look-alike: correct AMP (fp32 parameters, autocast fp16, GradScaler) that trains fine
    run("negative-1.log", "negative")
