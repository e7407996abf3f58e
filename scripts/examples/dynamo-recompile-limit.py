#!/usr/bin/env python
"""Real example logs for `dynamo-recompile-limit`.

positive-1: a compiled model fed batches whose sequence length changes every step,
compiled with dynamic=False, so every new length is a new graph until Dynamo hits
config.recompile_limit (8) and falls back to eager for that frame (warning, run slows).
positive-2 (torchrun): the same with fullgraph=True, where the limit is a hard error.
negative-1: TORCH_LOGS=recompiles shows two legitimate recompiles, then a healthy run.
Run: .venv/bin/python scripts/examples/dynamo-recompile-limit.py
"""
ID = "dynamo-recompile-limit"
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
    import time

    import torch
    import torch.nn as nn

    if mode == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 16))
    compiled = torch.compile(model, backend="eager", dynamic=False, fullgraph=(mode == "ddp"))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    lengths = [8, 8, 16, 8, 16] if mode == "negative" else list(range(8, 24))
    for step, seq in enumerate(lengths, 1):   # unpadded batches: a new sequence length each step
        t0 = time.time()
        loss = compiled(torch.randn(4, seq, 16)).pow(2).mean()
        loss.backward()
        opt.step()
        opt.zero_grad()
        print(f"step {step} seq_len {seq} loss {loss.item():.4f} step_time {1000 * (time.time() - t0):.0f}ms", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
    run("negative-1.log", "negative", env={"TORCH_LOGS": "recompiles"})
