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

import os
import pathlib
import re
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
TORCHRUN = VENV / "bin" / "torchrun"
KB_EXAMPLES = ROOT / "src" / "traintriage" / "kb" / "examples"

# This machine's torch build has no NumPy; drop its import-time warning, and show the
# interpreter paths as a typical conda image would so the examples read like a user's log.
_DROP = re.compile(r"Failed to initialize NumPy|_conversion_method_template")


def clean(text: str, workdir: str, project: str = "/workspace/train") -> str:
    # torch's worker signal handlers write their banner including the C string's NUL byte;
    # keep the log plain text.
    text = text.replace("\x00", "")
    lines = [ln for ln in text.splitlines() if not _DROP.search(ln)]
    text = "\n".join(lines) + "\n"
    text = text.replace(str(VENV / "lib"), "/opt/conda/lib").replace(str(VENV / "bin"), "/opt/conda/bin")
    text = text.replace(os.path.dirname(os.__file__), "/opt/conda/lib/python3.11")
    return text.replace(workdir, project)


def run(files: dict[str, str], cmd: list[str], *, env: dict[str, str] | None = None,
        project: str = "/workspace/train", timeout: int = 300, preexec=None) -> str:
    """Write `files` into a scratch dir, run `cmd` there, return the cleaned console output."""
    with tempfile.TemporaryDirectory(prefix="ttex-") as tmp:
        os.chmod(tmp, 0o755)
        for name, body in files.items():
            path = pathlib.Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        proc = subprocess.run([str(c) for c in cmd], cwd=tmp, env=full_env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout, preexec_fn=preexec)
        return clean(proc.stdout, tmp, project)


def write(entry_id: str, name: str, text: str) -> None:
    out = KB_EXAMPLES / entry_id / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"{out.relative_to(ROOT)}: {len(text.splitlines())} lines")

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
    with tempfile.TemporaryDirectory(prefix="ttex-") as tmp:
        (pathlib.Path(tmp) / "prepare.py").write_text(PREPARE)
        (pathlib.Path(tmp) / "pretrain.py").write_text(TRAIN)
        subprocess.run([str(PY), "prepare.py"], cwd=tmp, check=True, capture_output=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.run([str(c) for c in cmd], cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        return clean(proc.stdout, tmp, project)


if __name__ == "__main__":
    write(ID, "positive-1.log", run_prepared([TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                              "pretrain.py", "groups"], "/shared/vit-pretrain"))
    write(ID, "positive-2.log", run_prepared([PY, "pretrain.py", "adapter"], "/shared/vit-pretrain"))
    write(ID, "negative-1.log", run_prepared([PY, "pretrain.py", "head"], "/shared/vit-pretrain"))
