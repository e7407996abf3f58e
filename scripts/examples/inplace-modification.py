#!/usr/bin/env python
"""Real example logs for `inplace-modification`.

A residual block applies `out += identity` to the output of a Sigmoid gate (which
autograd saved for SigmoidBackward), so backward finds the tensor at version 1.
positive-2 runs with torch.autograd.set_detect_anomaly(True) under torchrun, which adds
the forward traceback ("Error detected in SigmoidBackward0").
Run: .venv/bin/python scripts/examples/inplace-modification.py
"""
ID = "inplace-modification"
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
        torch.autograd.set_detect_anomaly(True)

    class GatedBlock(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.proj = nn.Linear(d, d)
            self.gate = nn.Linear(d, d)

        def forward(self, x):
            out = torch.sigmoid(self.gate(x))
            out *= self.proj(x)          # BUG: in-place on a tensor saved for SigmoidBackward
            return out + x

    model = nn.Sequential(nn.Linear(16, 32), GatedBlock(32), nn.Linear(32, 4))
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    print("epoch 0: 128 batches, batch_size=32", flush=True)
    for step in range(1, 4):
        x, y = torch.randn(32, 16), torch.randint(0, 4, (32,))
        loss = nn.functional.cross_entropy(model(x), y)
        print(f"step {step} forward done, loss={loss.item():.4f}", flush=True)
        loss.backward()
        opt.step()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
