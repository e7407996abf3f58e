"""Regenerate real examples for empty-dataset (CPU, torch DataLoader/RandomSampler, torchrun + gloo).

positive-1.log: single process; the image index globs '*.jpg' but the export wrote '.JPG' files, so the
    dataset is empty and DataLoader(shuffle=True) fails in RandomSampler: "num_samples=0".
positive-2.log: 2 ranks under `torchrun --standalone --tee 3`; a length filter (max_tokens=64 against
    documents of 200+ tokens) removes every example on every rank.
negative-1.log: healthy run whose *validation* split is empty: the script logs a warning and skips
    evaluation (SequentialSampler does not raise), training completes.

Run: .venv/bin/python scripts/examples/empty-dataset.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, run_cleaned, write_log

ID = "empty-dataset"

TRAIN = r'''
import argparse, glob, logging, os
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


class Files(Dataset):
    def __init__(self, pattern):
        self.files = sorted(glob.glob(pattern, recursive=True))

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        return torch.randn(3, 32, 32), i % 2


class Docs(Dataset):
    def __init__(self, n, max_tokens):
        docs = [torch.randint(0, 1000, (200 + i % 50,)) for i in range(n)]
        self.docs = [d for d in docs if d.numel() <= max_tokens]

    def __len__(self):
        return len(self.docs)

    def __getitem__(self, i):
        return self.docs[i][:64], 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--mode")
    args = p.parse_args()
    if DIST:
        dist.init_process_group("gloo")
    if args.mode == "glob":
        os.makedirs("data/train/cats", exist_ok=True)
        for k in range(20):
            open(f"data/train/cats/IMG_{k:04d}.JPG", "wb").close()
        train = Files("data/train/**/*.jpg")
        val = Files("data/val/**/*.jpg")
    elif args.mode == "filter":
        train = Docs(500, max_tokens=64)
        val = Docs(50, max_tokens=64)
    else:
        os.makedirs("data/train/cats", exist_ok=True)
        for k in range(64):
            open(f"data/train/cats/img_{k:04d}.jpg", "wb").close()
        train = Files("data/train/**/*.jpg")
        val = Files("data/val/**/*.jpg")
    log.info("rank %d: %d training samples, %d validation samples", RANK, len(train), len(val))
    loader = DataLoader(train, batch_size=8, shuffle=True, num_workers=0)
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.LazyLinear(2))
    opt = None
    for epoch in range(2):
        for step, (x, y) in enumerate(loader, 1):
            out = model(x.float())
            if opt is None:
                opt = torch.optim.SGD(model.parameters(), lr=0.1)
            loss = torch.nn.functional.cross_entropy(out, torch.as_tensor(y))
            opt.zero_grad(); loss.backward(); opt.step()
        log.info("epoch %d done, loss %.4f", epoch, loss.item())
        if len(val) == 0:
            log.warning("validation set is empty (0 samples under data/val); skipping evaluation")
        else:
            for _ in DataLoader(val, batch_size=8):
                pass
    log.info("finished")


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write_log(ID, "positive-1.log", run_cleaned(files, [PY, "train.py", "--mode", "glob"], project="/home/yuki/catsdogs"))
    write_log(ID, "positive-2.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                                        "train.py", "--mode", "filter"], project="/home/yuki/lm-small"))
    write_log(ID, "negative-1.log", run_cleaned(files, [PY, "train.py", "--mode", "ok"], project="/home/yuki/catsdogs"))
