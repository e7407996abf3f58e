"""Regenerate real examples for python-package-missing.

positive-1.log: torchrun, 3 ranks (no --tee): the training script imports deepspeed, which is
  not installed in the venv -> ModuleNotFoundError on every rank, then ChildFailedError.
positive-2.log: an HF fine-tuning script run in a fresh venv that has transformers but no torch
  (throwaway venv /tmp/tt-hf, created on demand): AutoModelForCausalLM.from_pretrained ->
  "AutoModelForCausalLM requires PyTorch >= 2.6, but PyTorch was not found ...".
negative-1.log: the optional-dependency pattern: `import apex` inside try/except, a warning
  "apex not found, falling back to native torch.amp" logged with exc_info (so the
  ModuleNotFoundError traceback is in the log) and the run completes (exit 0).
negative-2.log: a vendored helper does `from torch._six import inf` (removed in torch 2.0):
  ModuleNotFoundError for a submodule of an installed package = package-version-incompatible.

Run: .venv/bin/python scripts/examples/python-package-missing.py
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
PY = ROOT / ".venv" / "bin" / "python"
TORCHRUN = ROOT / ".venv" / "bin" / "torchrun"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "python-package-missing"
HF_VENV = pathlib.Path("/tmp/tt-hf")

TRAIN = r'''
import logging, os, sys
import torch
import torch.distributed as dist

logging.basicConfig(format="[%(asctime)s] [%(levelname)s] [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("pretrain")
MODE = sys.argv[1]
if MODE == "deepspeed":
    rank = int(os.environ.get("RANK", 0))
    log.info("rank %d: parsing config configs/7b_zero2.yaml", rank)
    import deepspeed
    deepspeed.init_distributed()
elif MODE == "apex":
    try:
        from apex import amp  # noqa: F401
        HAS_APEX = True
    except ImportError:
        HAS_APEX = False
        log.warning("apex not found, falling back to native torch.amp for mixed precision",
                    exc_info=True)
    model = torch.nn.Linear(64, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for step in range(1, 5):
        loss = model(torch.randn(16, 64)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        log.info("step %d loss %.4f", step, loss.item())
    log.info("done, checkpoint saved to out/last.pt")
elif MODE == "six":
    log.info("building model")
    from torch._six import inf  # noqa: F401  (old clip_grad helper vendored from torch 1.x)
'''

FINETUNE = r'''
import logging, sys
from transformers import AutoConfig, AutoModelForCausalLM, TrainingArguments
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("finetune")
log.info("loading base model from ./gpt2-local")
cfg = AutoConfig.for_model("gpt2", n_layer=2, n_embd=64, n_head=2)
cfg.save_pretrained("./gpt2-local")
model = AutoModelForCausalLM.from_pretrained("./gpt2-local")
'''


def ensure_hf_venv() -> None:
    if not (HF_VENV / "bin" / "python").exists():
        subprocess.run(["python3", "-m", "venv", str(HF_VENV)], check=True)
        subprocess.run([str(HF_VENV / "bin" / "pip"), "install", "-q", "transformers==5.24.0"],
                       check=True)


def run(cmd: list[str], out: pathlib.Path, script: str = TRAIN, name: str = "train.py") -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / name).write_text(script)
        env = dict(os.environ, OMP_NUM_THREADS="1", HF_HUB_OFFLINE="1", HF_HOME=f"{tmp}/hf")
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    run([str(TORCHRUN), "--nproc-per-node", "3", "--master-port", "29721", "train.py", "deepspeed"],
        OUT / "positive-1.log")
    ensure_hf_venv()
    run([str(HF_VENV / "bin" / "python"), "finetune.py"], OUT / "positive-2.log", FINETUNE,
        "finetune.py")
    run([str(PY), "train.py", "apex"], OUT / "negative-1.log")
    run([str(PY), "train.py", "six"], OUT / "negative-2.log")
