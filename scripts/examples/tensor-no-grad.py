#!/usr/bin/env python
"""Real example logs for `tensor-no-grad`.

The whole model was frozen for LoRA-style fine-tuning (requires_grad_(False)) but
no adapter/head was left trainable, so the loss has no grad_fn.
positive-2: the loss is computed under torch.no_grad() left over from an eval helper.
Run: .venv/bin/python scripts/examples/tensor-no-grad.py
"""
ID = "tensor-no-grad"
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

    ddp = mode == "ddp"
    if ddp:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model = nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 2))
    if not ddp:
        for p in model.parameters():
            p.requires_grad_(False)              # BUG: froze the head too
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        total = sum(p.numel() for p in model.parameters())
        print(f"trainable params: {trainable} || all params: {total} || trainable%: {100 * trainable / total:.4f}", flush=True)
        opt = torch.optim.AdamW([p for p in model.parameters()], lr=1e-4)
        x, y = torch.randn(8, 16), torch.randint(0, 2, (8,))
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    else:
        model = nn.parallel.DistributedDataParallel(model)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
        for step in range(1, 3):
            x, y = torch.randn(8, 16), torch.randint(0, 2, (8,))
            with torch.no_grad():                # BUG: copied from the evaluation loop
                logits = model(x)
            loss = nn.functional.cross_entropy(logits, y)
            print(f"{{'loss': {loss.item():.4f}, 'learning_rate': 0.0001, 'epoch': 0.0{step}}}", flush=True)
            loss.backward()
            opt.step()


if __name__ == "__main__":
    if os.environ.get("TT_MODE"):
        train(os.environ["TT_MODE"])
        sys.exit(0)
    run("positive-1.log", "single")
    run("positive-2.log", "ddp", nproc=2)
