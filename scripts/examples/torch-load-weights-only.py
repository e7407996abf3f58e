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

from _runner import PY, TORCHRUN, run_cleaned, write_log

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
    return run_cleaned({"prepare.py": PREPARE, "train.py": TRAIN, "predict.py": TRAIN}, cmd, project=project, prepare="prepare.py")


if __name__ == "__main__":
    write_log(ID, "positive-1.log", run_prepared([TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3", "train.py",
                                                  "resume", "runs/exp12/last.pt"], "/home/maria/polyp-seg"))
    write_log(ID, "positive-2.log", run_prepared([PY, "predict.py", "full", "runs/exp12/unet_full.pt"], "/home/maria/polyp-seg"))
    write_log(ID, "negative-1.log", run_prepared([PY, "train.py", "resume", "runs/exp12/last_copy.pt"], "/home/maria/polyp-seg"))
