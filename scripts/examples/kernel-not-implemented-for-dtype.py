#!/usr/bin/env python
"""Real example logs for `kernel-not-implemented-for-dtype` (new entry).

positive-1: an SVD-based adapter initialisation (PiSSA-style) runs torch.linalg.svd on
bfloat16 weights on the CPU, where that kernel has no bf16 implementation
("linalg_svd_cpu" not implemented for 'BFloat16').
positive-2 (torchrun): knowledge distillation with teacher logits stored as int16 and
loaded as int64: log_softmax has no integer kernel
("log_softmax_lastdim_kernel_impl" not implemented for 'Long').
Run: .venv/bin/python scripts/examples/kernel-not-implemented-for-dtype.py
"""
ID = "kernel-not-implemented-for-dtype"
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
    import torch.nn.functional as F

    if mode == "single":
        base = nn.Linear(64, 64).to(torch.bfloat16)          # model loaded with torch_dtype=torch.bfloat16
        print(f"base weight dtype {base.weight.dtype}, initialising rank-8 adapter from its SVD", flush=True)
        U, S, Vh = torch.linalg.svd(base.weight, full_matrices=False)   # BUG: no bf16 CPU kernel
        print(U.shape, flush=True)
    else:
        import torch.distributed as dist
        dist.init_process_group("gloo")
        student = nn.parallel.DistributedDataParallel(nn.Linear(32, 100))
        teacher_logits = torch.randint(-300, 300, (16, 100))  # BUG: int16 logits from disk, never scaled/cast
        x = torch.randn(16, 32)
        print(f"[rank{dist.get_rank()}] distillation batch: teacher logits {teacher_logits.dtype}", flush=True)
        t = F.log_softmax(teacher_logits, dim=-1)                 # integer tensor: no kernel
        loss = F.kl_div(F.log_softmax(student(x), -1), t, log_target=True, reduction="batchmean")
        loss.backward()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
