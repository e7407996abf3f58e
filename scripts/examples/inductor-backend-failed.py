#!/usr/bin/env python
"""Real example log for `inductor-backend-failed`.

positive-1: torch.compile (inductor) with a post-grad graph pass that fails on the
captured graph: Inductor wraps the pass's exception into torch._inductor.exc.InductorError
(a BackendCompilerFailed subclass), the current form of "backend='inductor' raised".
positive-2 is written from the 2.1-2.5 source format (BackendCompilerFailed: backend='inductor' raised:).
Run: .venv/bin/python scripts/examples/inductor-backend-failed.py
"""
ID = "inductor-backend-failed"
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
    import torch._inductor.config as inductor_config
    import torch.nn as nn

    def fuse_bias_gelu(graph):
        # a hand-written fusion pass (as in a vendor/plugin backend) that assumes every
        # linear has a bias: fails on this model
        for node in graph.nodes:
            if node.op == "call_function" and "addmm" not in str(node.target) and "mm" in str(node.target):
                raise AssertionError(f"fuse_bias_gelu: expected addmm with bias, got {node.target}")

    inductor_config.post_grad_custom_post_pass = fuse_bias_gelu
    model = nn.Sequential(nn.Linear(16, 32, bias=False), nn.GELU(), nn.Linear(32, 4))
    compiled = torch.compile(model)
    print("step 0: compiling (first call) ...", flush=True)
    compiled(torch.randn(8, 16)).sum()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
