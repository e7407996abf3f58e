#!/usr/bin/env python
"""Real example logs for `dtype-mismatch`.

positive-1: features built with torch.from_numpy-style float64 reach an fp32 Linear
("mat1 and mat2 must have the same dtype, but got Double and Float").
positive-2 (torchrun): the model was cast to bfloat16 but the conv input stays float32
("Input type (float) and bias type (c10::BFloat16) should be the same").
Run: .venv/bin/python scripts/examples/dtype-mismatch.py
"""
ID = "dtype-mismatch"
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
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
