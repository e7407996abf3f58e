"""Regenerate real examples for file-not-found (CPU, plain python, DataLoader workers, torchrun + gloo).

positive-1.log: single process; --train_file points at a path that does not exist on this machine.
positive-2.log: 2 ranks under `torchrun --standalone --tee 3`; --resume_from names a checkpoint that was
    never written (wrong run id): torch.load raises on every rank.
positive-3.log: single process, num_workers=2; the sample index lists an image that was deleted: the
    worker's FileNotFoundError is re-raised as "Caught FileNotFoundError in DataLoader worker process N".
positive-4.log: `torchrun` started from the wrong directory: the training script itself cannot be opened.
negative-1.log: healthy run that looks for an optional overrides file, logs the FileNotFoundError as a
    warning, falls back to defaults and trains to completion.
negative-2.log: the same, but the warning prints the exception type ("FileNotFoundError: [Errno 2] ...").

Run: .venv/bin/python scripts/examples/file-not-found.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, run_cleaned, write_log

ID = "file-not-found"

TRAIN = r'''
import argparse, json, logging, os, sys
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("train")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


class JsonlDataset(Dataset):
    def __init__(self, path):
        with open(path) as f:
            self.rows = [json.loads(line) for line in f]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return torch.tensor(self.rows[i]["x"]), self.rows[i]["y"]


class ImageIndex(Dataset):
    def __init__(self, root):
        self.root = root
        self.files = sorted(os.listdir(root))
        os.remove(os.path.join(root, self.files[37]))   # removed by a cleanup job after indexing

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        with open(os.path.join(self.root, self.files[i]), "rb") as f:
            raw = f.read()
        return torch.tensor(list(raw[:16]), dtype=torch.float32)


def load_overrides(path):
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError as e:
        if os.environ.get("LOG_EXC_TYPE"):
            log.warning("optional overrides skipped: %s: %s", type(e).__name__, e)
        else:
            log.warning("optional overrides not loaded (%s); using defaults", e)
        return {}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--train_file")
    p.add_argument("--image_root")
    p.add_argument("--resume_from")
    p.add_argument("--overrides", default="/etc/train/overrides.json")
    p.add_argument("--epochs", type=int, default=1)
    args = p.parse_args()
    if DIST:
        dist.init_process_group("gloo")
    log.info("args: %s", vars(args))
    cfg = {"lr": 1e-3, **load_overrides(args.overrides)}
    model = torch.nn.Linear(16, 2)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"])
    if args.resume_from:
        log.info("resuming from %s", args.resume_from)
        state = torch.load(args.resume_from, map_location="cpu")
        model.load_state_dict(state["model"])
    if args.image_root:
        os.makedirs(args.image_root, exist_ok=True)
        for k in range(64):
            with open(os.path.join(args.image_root, f"img_{k:05d}.jpg"), "wb") as f:
                f.write(os.urandom(32))
        loader = DataLoader(ImageIndex(args.image_root), batch_size=4, num_workers=2)
        for step, x in enumerate(loader, 1):
            loss = model(x).pow(2).mean()
            log.info("step %d loss %.4f", step, loss.item())
        return
    if args.train_file:
        ds = JsonlDataset(args.train_file)
    else:
        ds = [(torch.randn(16), k % 2) for k in range(256)]
    loader = DataLoader(ds, batch_size=32, shuffle=True)
    for epoch in range(args.epochs):
        for step, (x, y) in enumerate(loader, 1):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 4 == 0:
                log.info("epoch %d step %d loss %.4f", epoch, step, loss.item())
    torch.save({"model": model.state_dict()}, "last.pt")
    log.info("training finished, saved last.pt")


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write_log(ID, "positive-1.log", run_cleaned(files, [PY, "train.py", "--train_file", "/data/sft/train.jsonl"], project="/home/lee/sft"))
    write_log(ID, "positive-2.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3", "train.py",
                                                        "--resume_from", "outputs/run-0412/checkpoint-last.pt"], project="/home/lee/sft"))
    write_log(ID, "positive-3.log", run_cleaned(files, [PY, "train.py", "--image_root", "images/train"], project="/home/lee/sft"))
    write_log(ID, "positive-4.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "scripts/train.py",
                                                        "--train_file", "data/train.jsonl"], project="/home/lee/sft"))
    write_log(ID, "negative-1.log", run_cleaned(files, [PY, "train.py", "--epochs", "2"], project="/home/lee/sft"))
    write_log(ID, "negative-2.log", run_cleaned(files, [PY, "train.py", "--epochs", "3"], env={"LOG_EXC_TYPE": "1"},
                                                project="/home/lee/sft"))
