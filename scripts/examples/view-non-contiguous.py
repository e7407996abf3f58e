#!/usr/bin/env python
"""Real example logs for `view-non-contiguous`.

Multi-head attention merges heads with out.transpose(1, 2).view(B, T, C): after the
transpose the tensor is not contiguous, so view() cannot express it.
Run: .venv/bin/python scripts/examples/view-non-contiguous.py
"""
ID = "view-non-contiguous"
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
        x = torch.randn(4, 8, 32)
        print("flattening patches for the classifier head", flush=True)
        x.view(4, 8 * 30)
        return
    ddp = mode == "ddp"
    if ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")

    class SelfAttention(nn.Module):
        def __init__(self, c=32, h=4):
            super().__init__()
            self.h, self.qkv, self.proj = h, nn.Linear(c, 3 * c), nn.Linear(c, c)

        def forward(self, x):
            B, T, C = x.shape
            q, k, v = self.qkv(x).split(C, dim=2)
            q, k, v = (t.view(B, T, self.h, C // self.h).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1) / (C // self.h) ** 0.5).softmax(-1)
            out = (att @ v).transpose(1, 2).view(B, T, C)      # BUG: needs .contiguous() or .reshape
            return self.proj(out)

    model = SelfAttention()
    if ddp:
        model = nn.parallel.DistributedDataParallel(model)
    print("number of parameters: 0.00M", flush=True)
    print("compiling the model... (skipped: compile=False)", flush=True)
    model(torch.randn(4, 8, 32)).sum().backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    # look-alike: view() with a size that does not match numel (a shape bug, not contiguity)
    run("negative-1.log", "negative")
