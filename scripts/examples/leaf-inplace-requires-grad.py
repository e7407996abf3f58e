#!/usr/bin/env python
"""Real example logs for `leaf-inplace-requires-grad` (new entry).

positive-1: custom weight init writes into an nn.Parameter in place outside
torch.no_grad() ("a leaf Variable that requires grad is being used in an in-place operation.").
positive-2 (torchrun): zeroing the padding row of an embedding by indexing the parameter
("a view of a leaf Variable that requires grad is being used in an in-place operation.").
Run: .venv/bin/python scripts/examples/leaf-inplace-requires-grad.py
"""
ID = "leaf-inplace-requires-grad"
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
    import math

    import torch
    import torch.nn as nn

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Embedding(100, 16)
            self.w = nn.Parameter(torch.empty(16, 16))
            self.reset_parameters()

        def reset_parameters(self):
            if mode == "single":
                self.w.uniform_(-1 / math.sqrt(16), 1 / math.sqrt(16))   # BUG: needs torch.no_grad()
            else:
                self.embed.weight[0].zero_()                            # BUG: padding row, same problem

    print("building model ...", flush=True)
    if mode != "single":
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model = Net()
    print("model ready", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
