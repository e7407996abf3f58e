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

from _runner import HF_OFFLINE, HF_VENV, PY, TORCHRUN, ensure_hf_venv, run_logged

ID = "python-package-missing"

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


if __name__ == "__main__":
    train = {"train.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "3", "--master-port", "29721", "train.py",
                                      "deepspeed"], files=train, env=HF_OFFLINE)
    ensure_hf_venv()
    run_logged(ID, "positive-2.log", [HF_VENV / "bin" / "python", "finetune.py"], files={"finetune.py": FINETUNE},
               env=HF_OFFLINE)
    run_logged(ID, "negative-1.log", [PY, "train.py", "apex"], files=train, env=HF_OFFLINE)
    run_logged(ID, "negative-2.log", [PY, "train.py", "six"], files=train, env=HF_OFFLINE)
