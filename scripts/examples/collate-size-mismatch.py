"""Regenerate real examples for collate-size-mismatch (CPU, torch default_collate, torchrun + gloo).

positive-1.log: single process, num_workers=0; an image folder with one 256x256 image among 224x224 ones
    and no Resize/CenterCrop: "stack expects each tensor to be equal size, but got [3, 224, 224] at
    entry 0 and [3, 256, 256] at entry 5".
positive-2.log: 2 ranks under `torchrun --standalone --tee 3`, num_workers=2; variable-length token
    sequences returned unpadded to the default collate_fn; the worker error is re-raised on the rank
    as "Caught RuntimeError in DataLoader worker process N".
negative-1.log: the batch collates fine but the model concatenates two feature maps of different
    width in forward(): "Sizes of tensors must match except in dimension 1" (a model-code shape bug).

Run: .venv/bin/python scripts/examples/collate-size-mismatch.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, run_cleaned, write_log

ID = "collate-size-mismatch"

TRAIN = r'''
import logging, os, sys
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

MODE = sys.argv[1]
logging.basicConfig(format="%(asctime)s [%(levelname)s] %(message)s", level=logging.INFO)
log = logging.getLogger(__name__)
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


class ImageFolderLite(Dataset):
    def __len__(self):
        return 1000

    def __getitem__(self, i):
        side = 256 if i % 97 == 5 else 224     # a few images were exported at another resolution
        return torch.rand(3, side, side), i % 5


class Sentences(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        n = 128 if i % 7 else 97 + i % 13        # sequences truncated to 128 tokens but never padded
        ids = torch.randint(5, 32000, (n,))
        return {"input_ids": ids, "labels": ids.clone()}


class TwoBranch(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.b = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.head = torch.nn.Linear(16, 5)

    def forward(self, x):
        feats = torch.cat([self.a(x), self.b(x)], dim=1)
        return self.head(feats.mean((2, 3)))


def main():
    if DIST:
        dist.init_process_group("gloo")
    if MODE == "images":
        loader = DataLoader(ImageFolderLite(), batch_size=8, shuffle=False, num_workers=0)
        model = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(8, 5))
    elif MODE == "tokens":
        loader = DataLoader(Sentences(), batch_size=16, shuffle=False, num_workers=2)
        model = torch.nn.Embedding(32000, 64)
    else:
        loader = DataLoader(ImageFolderLite(), batch_size=4, shuffle=False, num_workers=0)
        model = TwoBranch()
    if DIST:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    log.info("Starting epoch 1/30 (%d iterations)", len(loader))
    for it, batch in enumerate(loader, 1):
        if MODE == "tokens":
            loss = model(batch["input_ids"]).pow(2).mean()
        else:
            x, y = batch
            loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if RANK == 0:
            log.info("Epoch 1 iter %d/%d loss=%.4f", it, len(loader), loss.item())


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write_log(ID, "positive-1.log", run_cleaned(files, [PY, "train.py", "images"], project="/home/kim/cls-finetune"))
    write_log(ID, "positive-2.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                                        "train.py", "tokens"], project="/home/kim/lm"))
    write_log(ID, "negative-1.log", run_cleaned(files, [PY, "train.py", "model-cat"], project="/home/kim/cls-finetune"))
