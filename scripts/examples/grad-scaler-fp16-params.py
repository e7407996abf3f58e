#!/usr/bin/env python
"""Real example logs for `grad-scaler-fp16-params`.

The model was cast with .half() and then trained with AMP's GradScaler: the gradients
are fp16, and GradScaler.unscale_ refuses them ("Attempting to unscale FP16 gradients.").
positive-1 uses the CPU GradScaler (the check is identical for torch.amp.GradScaler("cuda")).
Run: .venv/bin/python scripts/examples/grad-scaler-fp16-params.py
"""
ID = "grad-scaler-fp16-params"
# --- runner: re-executes this file as the training script and saves its real output ---
import os
import pathlib
import re
import shutil
import socket
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "src/traintriage/kb/examples" / ID
VENV_BIN = pathlib.Path(sys.executable).parent
# this CPU venv has no numpy; torch warns about it at import: not part of the failure
DROP = re.compile(r"Failed to initialize NumPy|_conversion_method_template")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(name: str, mode: str, nproc: int = 0, env: dict | None = None) -> str:
    """Run this file as /tmp/tt-job/<ID>/train.py (plain python, or torchrun --tee 3)."""
    work = pathlib.Path("/tmp/tt-job") / ID
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    shutil.copy(__file__, work / "train.py")
    if nproc:
        cmd = [str(VENV_BIN / "torchrun"), f"--nproc-per-node={nproc}", "--tee=3",
               f"--master-port={_free_port()}", "train.py"]
    else:
        cmd = [sys.executable, "train.py"]
    full_env = dict(os.environ, TT_MODE=mode, PYTHONUNBUFFERED="1", **(env or {}))
    proc = subprocess.run(cmd, cwd=work, env=full_env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=600)
    text = "".join(l for l in proc.stdout.splitlines(keepends=True) if not DROP.search(l))
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / name).write_text(text)
    print(f"{name}: exit {proc.returncode}, {len(text.splitlines())} lines")
    return text


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
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    # look-alike: correct AMP (fp32 parameters, autocast fp16, GradScaler) that trains fine
    run("negative-1.log", "negative")
