"""Regenerate a real example for flash-attn-unsupported.

transformers 5.24 (throwaway venv /tmp/tt-hf, created on demand) with torch from .venv:
building a model with attn_implementation="flash_attention_2" where the flash-attn package
is not usable raises the real "ImportError: FlashAttention2 has been toggled on, but it cannot
be used due to the following error: ...".

positive-2.log: plain `python train.py`, a tiny Llama built from config.

Run: .venv/bin/python scripts/examples/flash-attn-unsupported.py
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
PY = ROOT / ".venv" / "bin" / "python"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "flash-attn-unsupported"
HF_VENV = pathlib.Path("/tmp/tt-hf")

TRAIN = r'''
import logging
import torch
from transformers import AutoConfig, AutoModelForCausalLM
logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
log = logging.getLogger("train")
cfg = AutoConfig.for_model("llama", hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                           num_attention_heads=8, num_key_value_heads=8, vocab_size=32000)
log.info("building LlamaForCausalLM (%d layers), dtype=bfloat16, attn=flash_attention_2", cfg.num_hidden_layers)
model = AutoModelForCausalLM.from_config(cfg, attn_implementation="flash_attention_2", dtype=torch.bfloat16)
'''


def ensure_hf_venv() -> None:
    if not (HF_VENV / "bin" / "python").exists():
        subprocess.run(["python3", "-m", "venv", str(HF_VENV)], check=True)
        subprocess.run([str(HF_VENV / "bin" / "pip"), "install", "-q", "transformers==5.24.0"],
                       check=True)


def run(cmd: list[str], out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_HOME=f"{tmp}/hf",
                   PYTHONPATH=str(HF_VENV / "lib" / "python3.11" / "site-packages"))
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    ensure_hf_venv()
    run([str(PY), "train.py"], OUT / "positive-2.log")
