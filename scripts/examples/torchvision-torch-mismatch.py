"""Regenerate a real example for torchvision-torch-mismatch.

torchvision 0.19.0 (built for torch 2.4) is installed with `pip --target /tmp/tt-tv --no-deps`
and put on PYTHONPATH in front of the .venv's torch 2.13, which is what `pip install
torchvision` without a matching pin (or a second site-packages) produces. Importing it fails in
torchvision/_meta_registrations.py with the real "RuntimeError: operator torchvision::nms does
not exist", because torchvision's C++ ops library could not register against this torch.

positive-1.log: torchrun, 2 ranks, `--tee 3`; the data pipeline imports torchvision.transforms.

Run: .venv/bin/python scripts/examples/torchvision-torch-mismatch.py
"""

from __future__ import annotations

import pathlib
import subprocess

from _runner import TORCHRUN, run_logged

ID = "torchvision-torch-mismatch"
TV = pathlib.Path("/tmp/tt-tv")

TRAIN = r'''
import logging
import torch, torch.distributed as dist
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("vit")
dist.init_process_group("gloo")
log.info("rank %d: torch %s, building ImageNet transforms", dist.get_rank(), torch.__version__)
from torchvision import transforms
'''


def ensure_tv() -> None:
    if not TV.exists():
        subprocess.run(["python3", "-m", "pip", "install", "-q", "--no-deps", "--target", str(TV),
                        "--only-binary=:all:", "torchvision==0.19.0"], check=True)


if __name__ == "__main__":
    ensure_tv()
    run_logged(ID, "positive-1.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29831", "--tee", "3",
                                      "train_vit.py"], files={"train_vit.py": TRAIN}, env={"PYTHONPATH": str(TV)})
