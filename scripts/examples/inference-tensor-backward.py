#!/usr/bin/env python
"""Real example logs for `inference-tensor-backward` (new entry).

Features (or a cached batch) were produced under torch.inference_mode() by a frozen
encoder and then fed to a trainable head: autograd cannot save inference tensors.
Run: .venv/bin/python scripts/examples/inference-tensor-backward.py
"""
ID = "inference-tensor-backward"
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
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
