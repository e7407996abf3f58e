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

from _runner import HF_ENV, TORCHRUN, ensure_hf_venv, run_logged

ID = "bf16-unsupported-gpu"

TRAIN = r'''
import logging, sys
import torch
from transformers import HfArgumentParser, TrainingArguments
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("sft")
log.info("torch %s, cuda available: %s", torch.__version__, torch.cuda.is_available())
(args,) = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
'''


if __name__ == "__main__":
    ensure_hf_venv()
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29821", "--tee", "3",
                                      "sft.py", "--output_dir", "out/sft", "--bf16", "--per_device_train_batch_size", "4"],
               files={"sft.py": TRAIN}, env=HF_ENV)
