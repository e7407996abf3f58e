"""Regenerate real examples for hf-hub-access-error.

transformers 5.24 + huggingface_hub (throwaway venv /tmp/tt-hf, created on demand) with
HF_HUB_OFFLINE=1 and an empty HF_HOME: the model is not in the cache and the hub may not be
contacted, so from_pretrained fails with the real
"OSError: We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find
them in the cached files." (no network traffic is attempted).

positive-1.log: torchrun (torch from .venv, transformers via PYTHONPATH), 2 ranks, `--tee 3`,
  every rank calls AutoConfig/AutoTokenizer.from_pretrained on a hub id.
(positive-2.log, the gated-repo 401 form, is written by hand from transformers/utils/hub.py and
huggingface_hub/utils/_http.py, since producing it needs the live hub.)

Run: .venv/bin/python scripts/examples/hf-hub-access-error.py
"""

from __future__ import annotations

from _runner import HF_ENV, TORCHRUN, ensure_hf_venv, run_logged

ID = "hf-hub-access-error"

TRAIN = r'''
import logging, os
import torch, torch.distributed as dist
from transformers import AutoConfig
from transformers.utils import logging as hf_logging
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
hf_logging.set_verbosity_info()
log = logging.getLogger("sft")
dist.init_process_group("gloo")
log.info("rank %d: loading config for mistralai/Mistral-7B-v0.3", dist.get_rank())
config = AutoConfig.from_pretrained("mistralai/Mistral-7B-v0.3")
'''


if __name__ == "__main__":
    ensure_hf_venv()
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29801", "--tee", "3", "sft.py"],
               files={"sft.py": TRAIN}, env=HF_ENV)
