"""Regenerate real examples for optimizer-state-mismatch (CPU, torch.optim load_state_dict on resume, torchrun + gloo).

positive-1.log: 2 ranks under `torchrun --standalone --tee 3`; the code now builds two parameter groups
    (decay / no-decay) but the checkpoint was written with one:
    "ValueError: loaded state dict has a different number of parameter groups".
positive-2.log: single process; a calibration layer was added on top of the head since the checkpoint was written:
    "ValueError: loaded state dict contains a parameter group that doesn't match the size of optimizer's group".
negative-1.log: the *model* weights no longer fit (a resized head): "Error(s) in loading state_dict ...
    size mismatch" (state-dict-mismatch), raised before the optimizer is touched.

Run: .venv/bin/python scripts/examples/optimizer-state-mismatch.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, run_cleaned, write_log

ID = "optimizer-state-mismatch"

PREPARE = r'''
import os, torch
model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.Linear(256, 10))
opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05)
model(torch.randn(4, 256)).sum().backward(); opt.step()
os.makedirs("ckpt", exist_ok=True)
torch.save({"step": 30000, "model": model.state_dict(), "optimizer": opt.state_dict()}, "ckpt/step_30000.pt")
'''

TRAIN = r'''
import logging, os, sys
import torch
import torch.distributed as dist

logging.basicConfig(format="%(asctime)s %(levelname)s %(filename)s:%(lineno)d] %(message)s", level=logging.INFO)
log = logging.getLogger("train")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))
variant = sys.argv[1]
if DIST:
    dist.init_process_group("gloo")
head = 12 if variant == "head" else 10
layers = [torch.nn.Linear(256, 256), torch.nn.LayerNorm(256), torch.nn.Linear(256, head)]
if variant == "adapter":
    layers.append(torch.nn.Linear(head, head))    # new calibration layer on top of the head
model = torch.nn.Sequential(*layers)
if variant == "groups":
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}], lr=5e-4)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=5e-4, weight_decay=0.05)
log.info("model params: %.2fM, optimizer groups: %d", sum(p.numel() for p in model.parameters()) / 1e6, len(opt.param_groups))
path = "ckpt/step_30000.pt"
log.info("Resuming from checkpoint %s", path)
ckpt = torch.load(path, map_location="cpu")
model.load_state_dict(ckpt["model"], strict=variant not in ("adapter",))
log.info("model weights restored (step %d)", ckpt["step"])
opt.load_state_dict(ckpt["optimizer"])
log.info("optimizer restored")
'''


def run_prepared(cmd, project):
    return run_cleaned({"prepare.py": PREPARE, "pretrain.py": TRAIN}, cmd, project=project, prepare="prepare.py")


if __name__ == "__main__":
    write_log(ID, "positive-1.log", run_prepared([TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                                  "pretrain.py", "groups"], "/shared/vit-pretrain"))
    write_log(ID, "positive-2.log", run_prepared([PY, "pretrain.py", "adapter"], "/shared/vit-pretrain"))
    write_log(ID, "negative-1.log", run_prepared([PY, "pretrain.py", "head"], "/shared/vit-pretrain"))
