#!/usr/bin/env python
"""Real example logs for `ddp-module-attribute-missing` (new entry).

After wrapping in DistributedDataParallel the script still calls a custom method of
the model on the wrapper ("'DistributedDataParallel' object has no attribute ...").
positive-1 (torchrun, 2 ranks): model.config; positive-2 (single process, DataParallel):
model.generate_samples.
Run: .venv/bin/python scripts/examples/ddp-module-attribute-missing.py
"""
ID = "ddp-module-attribute-missing"
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

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.config = {"hidden": 16, "vocab": 50}
            self.body = nn.Linear(16, 16)

        def forward(self, x):
            return self.body(x)

        def generate_samples(self, n):
            return self.body(torch.randn(n, 16))

    if mode == "ddp":
        import torch.distributed as dist
        dist.init_process_group("gloo")
        model = nn.parallel.DistributedDataParallel(Net())
        for step in range(1, 3):
            model(torch.randn(4, 16)).sum().backward()
            print(f"[rank{dist.get_rank()}] step {step} done", flush=True)
        print(f"saving checkpoint with hidden={model.config['hidden']}", flush=True)   # BUG: model.module.config
    else:
        model = nn.DataParallel(Net())
        print("epoch 1 finished, sampling 4 examples for the report", flush=True)
        model.generate_samples(4)                                                   # BUG: model.module.generate_samples


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "ddp", nproc=2)
    run("positive-2.log", "single")
