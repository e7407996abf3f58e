"""Regenerate real examples for package-version-incompatible.

Uses the throwaway venv /tmp/tt-hf (transformers 5.24.0, created on demand) and, for the
first case, an out-of-range tokenizers wheel installed into /tmp/tt-tok with --target.

positive-1.log: torchrun, 2 ranks, `--tee 3`; `import transformers` with tokenizers 0.22.1
  ahead on PYTHONPATH -> transformers' import-time dependency check raises
  "ImportError: tokenizers>=0.23.1,<0.24.0 is required for a normal functioning of this
  module, but found tokenizers==0.22.1."
positive-2.log: plain python; an older fine-tuning script does `from transformers import AdamW`
  (removed from transformers) -> "ImportError: cannot import name 'AdamW' from 'transformers'".
positive-3.log: torchrun, 2 ranks; a vendored torch-1.x helper does `from torch._six import inf`
  (torch._six was removed in torch 2.0) -> ModuleNotFoundError: No module named 'torch._six'.
negative-1.log: a circular import in the user's own package -> "ImportError: cannot import
  name 'build_model' from partially initialized module 'mypkg.models' (most likely due to a
  circular import)": same words, user-code bug, not a version problem.

Run: .venv/bin/python scripts/examples/package-version-incompatible.py
"""

from __future__ import annotations

import pathlib
import subprocess

from _runner import HF_SITE, HF_VENV, PY, TORCHRUN, ensure_hf_venv, run_logged

ID = "package-version-incompatible"
TOK = pathlib.Path("/tmp/tt-tok")

SCRIPT = r'''
import logging, os, sys
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("finetune")
MODE = sys.argv[1]
if MODE in ("tokenizers", "six"):
    import torch, torch.distributed as dist
    dist.init_process_group("gloo")
    log.info("rank %d/%d ready", dist.get_rank(), dist.get_world_size())
if MODE == "tokenizers":
    from transformers import AutoTokenizer, Trainer, TrainingArguments
elif MODE == "adamw":
    log.info("preparing optimizer (lr=2e-5, warmup=500)")
    from transformers import AdamW, get_linear_schedule_with_warmup
elif MODE == "six":
    from utils.clip_grad import clip_grad_norm_
elif MODE == "circular":
    log.info("building model from configs/base.yaml")
    from mypkg.train import main
'''


def ensure_envs() -> None:
    ensure_hf_venv()
    if not TOK.exists():
        subprocess.run([str(HF_VENV / "bin" / "pip"), "install", "-q", "--no-deps", "--target", str(TOK),
                        "--only-binary=:all:", "tokenizers==0.22.1"], check=True)


FILES = {
    "finetune.py": SCRIPT,
    "utils/__init__.py": "",
    "utils/clip_grad.py": "import torch\nfrom torch._six import inf\n\n\ndef clip_grad_norm_(parameters, max_norm, norm_type=2):\n"
                          "    ...\n",
    "mypkg/__init__.py": "",
    "mypkg/train.py": "from mypkg.models import build_model\n\n\ndef main():\n    build_model()\n",
    "mypkg/models.py": "from mypkg.losses import LabelSmoothingLoss\n\n\ndef build_model():\n    ...\n",
    "mypkg/losses.py": "from mypkg.models import build_model\n\n\nclass LabelSmoothingLoss:\n    ...\n",
}


def run(cmd: list[object], name: str, pythonpath: str = "") -> None:
    run_logged(ID, name, cmd, files=FILES, env={"PYTHONPATH": pythonpath})


if __name__ == "__main__":
    ensure_envs()
    run([TORCHRUN, "--nproc-per-node", "2", "--master-port", "29811", "--tee", "3", "finetune.py", "tokenizers"],
        "positive-1.log", f"{TOK}:{HF_SITE}")
    run([HF_VENV / "bin" / "python", "finetune.py", "adamw"], "positive-2.log")
    run([TORCHRUN, "--nproc-per-node", "2", "--master-port", "29812", "finetune.py", "six"], "positive-3.log")
    run([PY, "finetune.py", "circular"], "negative-1.log")
