"""Regenerate real examples for numpy-abi-mismatch.

A throwaway venv /tmp/tt-npabi (created on demand, --system-site-packages so it sees the
machine's NumPy 2.x) gets `bottleneck==1.3.7`, a wheel compiled against NumPy 1.x. Importing it
under NumPy 2 prints NumPy's real "A module that was compiled using NumPy 1.x cannot be run in
NumPy 2.x" banner, "AttributeError: _ARRAY_API not found" and
"ImportError: numpy.core.multiarray failed to import".

positive-1.log: torchrun, 2 ranks, `--tee 3`: the data module imports bottleneck on each rank
  (torch from .venv, NumPy 2 and bottleneck via PYTHONPATH), then ChildFailedError.
positive-2.log: plain `python prepare_data.py` in the throwaway venv with logging noise.

Run: .venv/bin/python scripts/examples/numpy-abi-mismatch.py
"""

from __future__ import annotations

import pathlib
import subprocess

from _runner import TORCHRUN, run_logged

ID = "numpy-abi-mismatch"
VENV = pathlib.Path("/tmp/tt-npabi")
SYS_SITE = "/root/.pyenv/versions/3.11.7/lib/python3.11/site-packages"  # NumPy 2.x lives here

TRAIN = r'''
import logging, os, sys
logging.basicConfig(format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s", level=logging.INFO)
log = logging.getLogger("data")
import numpy as np
log.info("numpy %s", np.__version__)
if sys.argv[1] == "torchrun":
    import torch, torch.distributed as dist
    dist.init_process_group("gloo")
    log.info("rank %d: building rolling-window features", dist.get_rank())
else:
    log.info("building rolling-window features for shard 0/16")
import bottleneck as bn  # fast moving-window stats
feats = bn.move_mean(np.arange(10.0), window=3)
'''


def ensure_venv() -> None:
    if not (VENV / "bin" / "python").exists():
        subprocess.run(["python3", "-m", "venv", "--system-site-packages", str(VENV)], check=True)
        subprocess.run([str(VENV / "bin" / "pip"), "install", "-q", "--no-deps",
                        "--only-binary=:all:", "bottleneck==1.3.7"], check=True)


if __name__ == "__main__":
    ensure_venv()
    site = VENV / "lib" / "python3.11" / "site-packages"
    files = {"prepare_data.py": TRAIN}
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29731", "--tee", "3",
                                      "prepare_data.py", "torchrun"], files=files,
               env={"PYTHONPATH": f"{site}:{SYS_SITE}"})
    run_logged(ID, "positive-2.log", [VENV / "bin" / "python", "prepare_data.py", "plain"], files=files)
