"""Regenerate a real example for bf16-unsupported-gpu.

transformers 5.24 (throwaway venv /tmp/tt-hf, created on demand) with torch from .venv:
TrainingArguments(bf16=True) validates bf16 support at construction. On this CPU-only host
is_torch_bf16_gpu_available() is False, so it raises the real
"ValueError: Your setup doesn't support bf16/gpu. ..." (on a pre-Ampere GPU the same line
ends with " You need Ampere+ GPU with cuda>=11.0.", see positive-1.log, written by hand).

positive-2.log: torchrun, 2 ranks, `--tee 3`, an HF Trainer script with --bf16.

Run: .venv/bin/python scripts/examples/bf16-unsupported-gpu.py
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCHRUN = ROOT / ".venv" / "bin" / "torchrun"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "bf16-unsupported-gpu"
HF_VENV = pathlib.Path("/tmp/tt-hf")

TRAIN = r'''
import logging, sys
import torch
from transformers import HfArgumentParser, TrainingArguments
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("sft")
log.info("torch %s, cuda available: %s", torch.__version__, torch.cuda.is_available())
(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
'''


def ensure_hf_venv() -> None:
    if not (HF_VENV / "bin" / "python").exists():
        subprocess.run(["python3", "-m", "venv", str(HF_VENV)], check=True)
        subprocess.run([str(HF_VENV / "bin" / "pip"), "install", "-q", "transformers==5.24.0"],
                       check=True)


def run(cmd: list[str], out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "sft.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_HOME=f"{tmp}/hf",
                   PYTHONPATH=str(HF_VENV / "lib" / "python3.11" / "site-packages"))
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    ensure_hf_venv()
    run([str(TORCHRUN), "--nproc-per-node", "2", "--master-port", "29821", "--tee", "3", "sft.py",
         "--output_dir", "out/sft", "--bf16", "--per_device_train_batch_size", "4"],
        OUT / "positive-2.log")
