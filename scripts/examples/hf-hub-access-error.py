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

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
TORCHRUN = ROOT / ".venv" / "bin" / "torchrun"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "hf-hub-access-error"
HF_VENV = pathlib.Path("/tmp/tt-hf")

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
    run([str(TORCHRUN), "--nproc-per-node", "2", "--master-port", "29801", "--tee", "3", "sft.py"],
        OUT / "positive-1.log")
