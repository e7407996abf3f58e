"""Regenerate the real example of corrupt-data-sample that this machine can produce (CPU, torch DataLoader).

Pillow is not installed here, so the image-decoding examples (positive-1, positive-3, negative-1) are
written by hand from Pillow's and torch's message formats; this script produces:
positive-2.log: single process, a JSON-lines dataset whose record 1337 was cut when the file was
    written; json.loads in __getitem__ raises JSONDecodeError at the batch that draws it.

Run: .venv/bin/python scripts/examples/corrupt-data-sample.py
"""
from __future__ import annotations

from _runner import PY, run_cleaned, write_log

ID = "corrupt-data-sample"

TRAIN = r'''
import json, logging, os
import torch
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(format="%(asctime)s | %(levelname)s | %(name)s | %(message)s", level=logging.INFO)
log = logging.getLogger("sft")


def write_data(path, n=4000):
    with open(path, "w") as f:
        for i in range(n):
            line = json.dumps({"id": i, "prompt": f"question {i}", "response": "answer " * (i % 7 + 1)})
            if i == 1337:
                line = line[: len(line) // 2]          # record cut when the export job was killed
            f.write(line + "\n")


class JsonlSFT(Dataset):
    def __init__(self, path):
        self.path = path
        self.offsets = []
        with open(path, "rb") as f:
            off = 0
            for line in f:
                self.offsets.append(off)
                off += len(line)

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        with open(self.path, "rb") as f:
            f.seek(self.offsets[i])
            rec = json.loads(f.readline())
        ids = torch.tensor([hash(w) % 32000 for w in (rec["prompt"] + " " + rec["response"]).split()][:32])
        return torch.nn.functional.pad(ids, (0, 32 - ids.numel()))


def main():
    os.makedirs("data", exist_ok=True)
    write_data("data/sft_train.jsonl")
    ds = JsonlSFT("data/sft_train.jsonl")
    log.info("loaded index of %d records from data/sft_train.jsonl", len(ds))
    loader = DataLoader(ds, batch_size=32, shuffle=False, num_workers=0)
    emb = torch.nn.Embedding(32000, 64)
    opt = torch.optim.AdamW(emb.parameters(), lr=1e-3)
    for step, batch in enumerate(loader, 1):
        loss = emb(batch).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0:
            log.info("step %d/%d loss=%.4f", step, len(loader), loss.item())


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    write_log(ID, "positive-2.log", run_cleaned({"train_sft.py": TRAIN}, [PY, "train_sft.py"], project="/home/ops/sft-small"))
