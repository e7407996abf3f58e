#!/usr/bin/env python
"""Real example logs for `multinomial-invalid-probability` (new entry).

Sampling from a model whose fp16 logits overflowed to inf (and NaN after softmax):
torch.multinomial rejects the probability tensor.
positive-1: a generation loop with temperature sampling; positive-2 (torchrun): an
RL-style rollout on two ranks.
Run: .venv/bin/python scripts/examples/multinomial-invalid-probability.py
"""
ID = "multinomial-invalid-probability"
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
    torch.manual_seed(0)
    lm_head = nn.Linear(16, 50)
    with torch.no_grad():
        lm_head.weight[7] = 1e5                     # a diverged row: logits overflow fp16
    hidden = torch.randn(2, 16)
    out = []
    for t in range(8):
        logits = lm_head(hidden).half().float()     # model ran in fp16: 1e5 -> inf
        if t < 3:
            logits[:, 7] = 0.0
        probs = torch.softmax(logits / 0.7, dim=-1)
        tok = torch.multinomial(probs, num_samples=1)
        out.append(tok)
        print(f"generated token {t}: {tok.view(-1).tolist()}", flush=True)


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
