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

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "package-version-incompatible"
HF_VENV = pathlib.Path("/tmp/tt-hf")
HF_SITE = HF_VENV / "lib" / "python3.11" / "site-packages"
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
    if not (HF_VENV / "bin" / "python").exists():
        subprocess.run(["python3", "-m", "venv", str(HF_VENV)], check=True)
        subprocess.run([str(HF_VENV / "bin" / "pip"), "install", "-q", "transformers==5.24.0"],
                       check=True)
    if not TOK.exists():
        subprocess.run([str(HF_VENV / "bin" / "pip"), "install", "-q", "--no-deps", "--target", str(TOK),
                        "--only-binary=:all:", "tokenizers==0.22.1"], check=True)


def run(cmd: list[str], out: pathlib.Path, pythonpath: str = "") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        t = pathlib.Path(tmp)
        (t / "finetune.py").write_text(SCRIPT)
        (t / "utils").mkdir()
        (t / "utils" / "__init__.py").write_text("")
        (t / "utils" / "clip_grad.py").write_text(
            "import torch\nfrom torch._six import inf\n\n\ndef clip_grad_norm_(parameters, max_norm, norm_type=2):\n"
            "    ...\n")
        (t / "mypkg").mkdir()
        (t / "mypkg" / "__init__.py").write_text("")
        (t / "mypkg" / "train.py").write_text("from mypkg.models import build_model\n\n\ndef main():\n    build_model()\n")
        (t / "mypkg" / "models.py").write_text("from mypkg.losses import LabelSmoothingLoss\n\n\ndef build_model():\n    ...\n")
        (t / "mypkg" / "losses.py").write_text("from mypkg.models import build_model\n\n\nclass LabelSmoothingLoss:\n    ...\n")
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=pythonpath)
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    ensure_envs()
    run([str(VENV_BIN / "torchrun"), "--nproc-per-node", "2", "--master-port", "29811", "--tee", "3",
         "finetune.py", "tokenizers"], OUT / "positive-1.log", f"{TOK}:{HF_SITE}")
    run([str(HF_VENV / "bin" / "python"), "finetune.py", "adamw"], OUT / "positive-2.log")
    run([str(VENV_BIN / "torchrun"), "--nproc-per-node", "2", "--master-port", "29812",
         "finetune.py", "six"], OUT / "positive-3.log")
    run([str(VENV_BIN / "python"), "finetune.py", "circular"], OUT / "negative-1.log")
