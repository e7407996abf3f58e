"""Regenerate a real example for flash-attn-unsupported.

transformers 5.24 (throwaway venv /tmp/tt-hf, created on demand) with torch from .venv:
building a model with attn_implementation="flash_attention_2" where the flash-attn package
is not usable raises the real "ImportError: FlashAttention2 has been toggled on, but it cannot
be used due to the following error: ...".

positive-2.log: plain `python train.py`, a tiny Llama built from config.

Run: .venv/bin/python scripts/examples/flash-attn-unsupported.py
"""

from __future__ import annotations

from _runner import HF_ENV, PY, ensure_hf_venv, run_logged

ID = "flash-attn-unsupported"

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


if __name__ == "__main__":
    ensure_hf_venv()
    run_logged(ID, "positive-2.log", [PY, "train.py"], files={"train.py": TRAIN}, env=HF_ENV)
