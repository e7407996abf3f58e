#!/usr/bin/env python
"""Real example logs for `loss-target-mismatch`.

positive-1: causal-LM logits flattened to (B*T, V) but labels left as (B,) class ids
("Expected input batch_size (240) to match target batch_size (16)").
positive-2 (torchrun): regression-style float labels passed to CrossEntropyLoss
("expected target dtype to be Long or Byte, but got Float" in this version).
Run: .venv/bin/python scripts/examples/loss-target-mismatch.py
"""
ID = "loss-target-mismatch"
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
        emb, head = nn.Embedding(100, 32), nn.Linear(32, 100)
        ids = torch.randint(0, 100, (16, 16))
        labels = torch.randint(0, 100, (16,))                   # BUG: one label per sequence
        logits = head(emb(ids[:, :-1]))                        # (16, 15, 100)
        print("Epoch 1/3:   0%|          | 0/125 [00:00<?, ?it/s]", flush=True)
        loss = nn.functional.cross_entropy(logits.reshape(-1, 100), labels)
        loss.backward()
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        model = nn.parallel.DistributedDataParallel(nn.Linear(20, 3))
        crit = nn.CrossEntropyLoss()
        x = torch.randn(32, 20)
        y = torch.tensor([0.0, 1.0, 2.0, 1.0] * 8)              # BUG: labels read as float
        print(f"[rank {dist.get_rank()}] batch x={tuple(x.shape)} y={tuple(y.shape)} {y.dtype}", flush=True)
        loss = crit(model(x), y)
        loss.backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
