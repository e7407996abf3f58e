#!/usr/bin/env python
"""Real example logs for `autograd-anomaly-nan`.

Training with torch.autograd.set_detect_anomaly(True): a log() over probabilities that
reach exactly 0 gives an inf forward value and a NaN gradient; anomaly mode names the
backward function and prints the forward traceback.
Run: .venv/bin/python scripts/examples/autograd-anomaly-nan.py
"""
ID = "autograd-anomaly-nan"
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
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    # look-alike: anomaly detection enabled (warning) in a run whose gradients stay finite
    run("negative-1.log", "negative")
