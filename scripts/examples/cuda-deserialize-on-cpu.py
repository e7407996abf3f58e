"""Regenerate real examples for cuda-deserialize-on-cpu (CPU-only torch, torch.load of GPU-saved checkpoints).

The checkpoints are written with their storages tagged 'cuda:N' (what torch.save records for tensors
that lived on a GPU) by patching torch.serialization.location_tag while saving; loading is untouched.
positive-1.log: single process; a CPU-only evaluation box loads a checkpoint saved on GPU without
    map_location: "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False".
positive-2.log: 2 ranks under `torchrun --standalone --tee 3` (gloo, CPU-only CI job) resuming the same way.
positive-3.log: single process on a host that exposes one GPU (simulated: torch.cuda.is_available/device_count
    patched to True/1 in the loader), checkpoint saved from cuda:3 of an 8-GPU node:
    "Attempting to deserialize object on CUDA device 3 but torch.cuda.device_count() is 1".
negative-1.log: the script itself calls model.cuda() on a CPU-only build:
    "AssertionError: Torch not compiled with CUDA enabled" (torch-not-compiled-with-cuda).

Run: .venv/bin/python scripts/examples/cuda-deserialize-on-cpu.py
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

ID = "cuda-deserialize-on-cpu"

PREPARE = r'''
import os, torch, torch.serialization as ser
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
model(torch.randn(2, 128)).sum().backward(); opt.step()
os.makedirs("checkpoints", exist_ok=True)
orig = ser.location_tag
for dev, name in [("cuda:0", "epoch_19.pt"), ("cuda:3", "epoch_19_rank3.pt")]:
    ser.location_tag = lambda storage, dev=dev: dev
    torch.save({"epoch": 19, "model": model.state_dict(), "optimizer": opt.state_dict()}, f"checkpoints/{name}")
ser.location_tag = orig
'''

TRAIN = r'''
import logging, os, sys
import torch
import torch.distributed as dist

logging.basicConfig(format="%(asctime)s [%(levelname)s] %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("eval")
DIST = "RANK" in os.environ
mode, path = sys.argv[1], sys.argv[2]
if mode == "one-gpu-host":
    torch.cuda.is_available = lambda: True      # stand-in for a host with a single visible GPU
    torch.cuda.device_count = lambda: 1
if DIST:
    dist.init_process_group("gloo")
device = "cuda" if (mode == "cuda-model" or torch.cuda.is_available()) else "cpu"
log.info("device=%s, loading %s", device, path)
model = torch.nn.Sequential(torch.nn.Linear(128, 256), torch.nn.ReLU(), torch.nn.Linear(256, 4))
if mode == "cuda-model":
    model = model.cuda()
ckpt = torch.load(path)
model.load_state_dict(ckpt["model"])
log.info("restored epoch %d", ckpt["epoch"])
'''


def run_prepared(cmd, project):
    with tempfile.TemporaryDirectory(prefix="ttex-") as tmp:
        (pathlib.Path(tmp) / "prepare.py").write_text(PREPARE)
        (pathlib.Path(tmp) / "evaluate.py").write_text(TRAIN)
        subprocess.run([str(PY), "prepare.py"], cwd=tmp, check=True, capture_output=True)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        proc = subprocess.run([str(c) for c in cmd], cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
        return clean(proc.stdout, tmp, project)


if __name__ == "__main__":
    write(ID, "positive-1.log", run_prepared([PY, "evaluate.py", "cpu", "checkpoints/epoch_19.pt"], "/Users/tom/work/churn-model"))
    write(ID, "positive-2.log", run_prepared([TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3", "evaluate.py",
                                              "cpu", "checkpoints/epoch_19.pt"], "/builds/ml/churn-model"))
    write(ID, "positive-3.log", run_prepared([PY, "evaluate.py", "one-gpu-host", "checkpoints/epoch_19_rank3.pt"],
                                             "/home/tom/churn-model"))
    write(ID, "negative-1.log", run_prepared([PY, "evaluate.py", "cuda-model", "checkpoints/epoch_19.pt"],
                                             "/Users/tom/work/churn-model"))
