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

import os
import pathlib
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV_BIN = ROOT / ".venv" / "bin"
OUT = ROOT / "src" / "traintriage" / "kb" / "examples" / "torchvision-torch-mismatch"
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


def run(cmd: list[str], out: pathlib.Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (pathlib.Path(tmp) / "train_vit.py").write_text(TRAIN)
        env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(TV))
        proc = subprocess.run(cmd, cwd=tmp, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(proc.stdout)
    print(f"{out}: exit {proc.returncode}, {len(proc.stdout.splitlines())} lines")


if __name__ == "__main__":
    ensure_tv()
    run([str(VENV_BIN / "torchrun"), "--nproc-per-node", "2", "--master-port", "29831", "--tee", "3",
         "train_vit.py"], OUT / "positive-1.log")
