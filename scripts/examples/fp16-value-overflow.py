#!/usr/bin/env python
"""Real example logs for `fp16-value-overflow` (new entry).

An attention mask filled with a hard-coded -1e9 (or torch.finfo(torch.float32).min)
in a model running in float16: the constant is outside the half range (max 65504).
Run: .venv/bin/python scripts/examples/fp16-value-overflow.py
"""
ID = "fp16-value-overflow"
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
    attn_in = nn.Linear(16, 16).half()
    print(f"loaded model in torch.float16, {sum(p.numel() for p in attn_in.parameters())} params", flush=True)
    x = torch.randn(2, 8, 16).half()
    scores = attn_in(x) @ x.transpose(1, 2)
    pad = torch.zeros(2, 8, 8, dtype=torch.bool)
    pad[:, :, 6:] = True
    if mode == "single":
        scores = scores.masked_fill(pad, -1e9)                     # BUG: use torch.finfo(scores.dtype).min
    else:
        scores.masked_fill_(pad, torch.finfo(torch.float32).min)   # same bug with the fp32 minimum
    print(scores.softmax(-1).shape, flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
