"""Regenerate real examples for state-dict-mismatch (CPU).

positive-1.log: single process; a checkpoint saved from a DDP-wrapped model (keys carry
  the `module.` prefix) is loaded into the bare model with strict=True: every key is
  reported missing and every checkpoint key unexpected.
positive-2.log: 2 ranks under `torchrun --tee 3`: fine-tuning resumes a checkpoint whose
  classifier has 1000 classes into a model built with 10: `size mismatch for ...`.
negative-1.log: the same DDP checkpoint loaded with strict=False: load_state_dict returns
  _IncompatibleKeys, the script prints it and carries on (nothing raised).

Run: .venv/bin/python scripts/examples/state-dict-mismatch.py
"""

from __future__ import annotations

from _runner import PY, TORCHRUN, run_logged

ID = "state-dict-mismatch"

TRAIN = r'''
import logging, sys
import torch
import torch.distributed as dist

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s",
                    level=logging.INFO)
log = logging.getLogger("finetune")
MODE = sys.argv[1]


class ConvNet(torch.nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.Conv2d(16, 32, 3, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1))
        self.fc = torch.nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).flatten(1))


class Wrapped(torch.nn.Module):   # what DistributedDataParallel.state_dict() looks like
    def __init__(self, module):
        super().__init__()
        self.module = module


if MODE in ("prefix", "prefix-nonstrict"):
    torch.save({"epoch": 12, "model": Wrapped(ConvNet()).state_dict()}, "last.pt")
    model = ConvNet()
    ckpt = torch.load("last.pt", map_location="cpu", weights_only=True)
    log.info("loaded checkpoint last.pt (epoch %d)", ckpt["epoch"])
    if MODE == "prefix":
        model.load_state_dict(ckpt["model"])
    else:
        result = model.load_state_dict(ckpt["model"], strict=False)
        print(result)
        log.info("resuming training from epoch %d", ckpt["epoch"] + 1)
elif MODE == "size":
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    if rank == 0:
        torch.save(ConvNet(num_classes=1000).state_dict(), "imagenet-pretrained.pt")
    dist.barrier()
    model = ConvNet(num_classes=10)
    log.info("rank %d: initialising from imagenet-pretrained.pt", rank)
    state = torch.load("imagenet-pretrained.pt", map_location="cpu", weights_only=True)
    model.load_state_dict(state)
    dist.destroy_process_group()
'''


if __name__ == "__main__":
    files = {"finetune.py": TRAIN}
    run_logged(ID, "positive-1.log", [PY, "finetune.py", "prefix"], files=files)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29681", "--tee", "3",
                                      "finetune.py", "size"], files=files)
    run_logged(ID, "negative-1.log", [PY, "finetune.py", "prefix-nonstrict"], files=files)
