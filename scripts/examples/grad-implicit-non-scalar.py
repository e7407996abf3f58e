#!/usr/bin/env python
"""Real example logs for `grad-implicit-non-scalar` (new entry).

positive-1: the loss is built with reduction='none' (per-token weights applied later)
and .backward() is called on the vector ("grad can be implicitly created only for scalar outputs").
positive-2 (torchrun): a model returns a per-sample loss vector of shape [batch].
Run: .venv/bin/python scripts/examples/grad-implicit-non-scalar.py
"""
ID = "grad-implicit-non-scalar"
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
        model = nn.Linear(16, 5)
        crit = nn.CrossEntropyLoss(reduction="none")           # per-sample weights applied below
        for step in range(1, 3):
            x, y = torch.randn(32, 16), torch.randint(0, 5, (32,))
            w = torch.rand(32)
            loss = crit(model(x), y) * w                         # BUG: never reduced to a scalar
            print(f"step {step}: loss shape {tuple(loss.shape)}", flush=True)
            loss.backward()
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")

        class Regressor(nn.Module):
            def __init__(self):
                super().__init__()
                self.body = nn.Linear(8, 1)

            def forward(self, x, y):
                return (self.body(x).squeeze(-1) - y) ** 2       # per-sample loss, no .mean()

        model = nn.parallel.DistributedDataParallel(Regressor())
        print(f"[rank{dist.get_rank()}] epoch 0 start", flush=True)
        loss = model(torch.randn(16, 8), torch.randn(16))
        loss.backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
