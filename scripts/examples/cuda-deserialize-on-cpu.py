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

from _runner import PY, TORCHRUN, run_cleaned, write_log

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
    return run_cleaned({"prepare.py": PREPARE, "evaluate.py": TRAIN}, cmd, project=project, prepare="prepare.py")


if __name__ == "__main__":
    write_log(ID, "positive-1.log", run_prepared([PY, "evaluate.py", "cpu", "checkpoints/epoch_19.pt"], "/Users/tom/work/churn-model"))
    write_log(ID, "positive-2.log", run_prepared([TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3", "evaluate.py",
                                                  "cpu", "checkpoints/epoch_19.pt"], "/builds/ml/churn-model"))
    write_log(ID, "positive-3.log", run_prepared([PY, "evaluate.py", "one-gpu-host", "checkpoints/epoch_19_rank3.pt"],
                                                 "/home/tom/churn-model"))
    write_log(ID, "negative-1.log", run_prepared([PY, "evaluate.py", "cuda-model", "checkpoints/epoch_19.pt"],
                                                 "/Users/tom/work/churn-model"))
