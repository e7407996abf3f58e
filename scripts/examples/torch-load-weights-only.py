"""Regenerate real examples for torch-load-weights-only (CPU, torch>=2.6 default weights_only=True, torchrun + gloo).

positive-1.log: 2 ranks under `torchrun --standalone --tee 3` resume a checkpoint that also stores the
    argparse.Namespace of the run: "Unsupported global: GLOBAL argparse.Namespace was not an allowed global".
positive-2.log: single process; an inference script loads a *whole pickled model* (torch.save(model)):
    "Unsupported global: GLOBAL __main__.UNet ..." (plus torch's hint about the class' module).
negative-1.log: a checkpoint truncated by an interrupted copy: "failed finding central directory"
    (checkpoint-corrupt, not the weights_only policy).

Run: .venv/bin/python scripts/examples/torch-load-weights-only.py
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

ID = "torch-load-weights-only"

PREPARE = r'''
import argparse, os, torch

class UNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.up = torch.nn.Conv2d(16, 1, 3, padding=1)

    def forward(self, x):
        return self.up(torch.relu(self.down(x)))

os.makedirs("runs/exp12", exist_ok=True)
net = UNet()
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
args = argparse.Namespace(lr=1e-3, epochs=200, batch_size=16, data="/data/kvasir")
torch.save({"epoch": 57, "model": net.state_dict(), "optimizer": opt.state_dict(), "args": args}, "runs/exp12/last.pt")
torch.save(net, "runs/exp12/unet_full.pt")
data = open("runs/exp12/last.pt", "rb").read()
open("runs/exp12/last_copy.pt", "wb").write(data[: len(data) // 2])
'''

TRAIN = r'''
import logging, os, sys
import torch
import torch.distributed as dist

logging.basicConfig(format="%(asctime)s | %(levelname)s | %(message)s", level=logging.INFO)
log = logging.getLogger("seg")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


class UNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.down = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.up = torch.nn.Conv2d(16, 1, 3, padding=1)

    def forward(self, x):
        return self.up(torch.relu(self.down(x)))


mode, path = sys.argv[1], sys.argv[2]
if DIST:
    dist.init_process_group("gloo")
log.info("torch %s, loading %s", torch.__version__.split("+")[0], path)
if mode == "resume":
    net = UNet()
    ckpt = torch.load(path, map_location="cpu")
    net.load_state_dict(ckpt["model"])
    log.info("resumed at epoch %d", ckpt["epoch"])
else:
    net = torch.load(path, map_location="cpu")
    net.eval()
    log.info("model ready")
'''


def run_prepared(cmd, project):
    with tempfile.TemporaryDirectory(prefix="ttex-") as tmp:
        (pathlib.Path(tmp) / "prepare.py").write_text(PREPARE)
        (pathlib.Path(tmp) / "train.py").write_text(TRAIN)
        (pathlib.Path(tmp) / "predict.py").write_text(TRAIN)
        subprocess.run([str(PY), "prepare.py"], cwd=tmp, check=True, capture_output=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.run([str(c) for c in cmd], cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        return clean(proc.stdout, tmp, project)


if __name__ == "__main__":
    write(ID, "positive-1.log", run_prepared([TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3", "train.py",
                                              "resume", "runs/exp12/last.pt"], "/home/maria/polyp-seg"))
    write(ID, "positive-2.log", run_prepared([PY, "predict.py", "full", "runs/exp12/unet_full.pt"], "/home/maria/polyp-seg"))
    write(ID, "negative-1.log", run_prepared([PY, "train.py", "resume", "runs/exp12/last_copy.pt"], "/home/maria/polyp-seg"))
