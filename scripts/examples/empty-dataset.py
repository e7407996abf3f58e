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

import os
import pathlib
import re
import subprocess
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[2]
VENV = ROOT / ".venv"
PY = VENV / "bin" / "python"
TORCHRUN = VENV / "bin" / "torchrun"
KB_EXAMPLES = ROOT / "src" / "traintriage" / "kb" / "examples"

# This machine's torch build has no NumPy; drop its import-time warning, and show the
# interpreter paths as a typical conda image would so the examples read like a user's log.
_DROP = re.compile(r"Failed to initialize NumPy|_conversion_method_template")


def clean(text: str, workdir: str, project: str = "/workspace/train") -> str:
    # torch's worker signal handlers write their banner including the C string's NUL byte;
    # keep the log plain text.
    text = text.replace("\x00", "")
    lines = [ln for ln in text.splitlines() if not _DROP.search(ln)]
    text = "\n".join(lines) + "\n"
    text = text.replace(str(VENV / "lib"), "/opt/conda/lib").replace(str(VENV / "bin"), "/opt/conda/bin")
    text = text.replace(os.path.dirname(os.__file__), "/opt/conda/lib/python3.11")
    return text.replace(workdir, project)


def run(files: dict[str, str], cmd: list[str], *, env: dict[str, str] | None = None,
        project: str = "/workspace/train", timeout: int = 300, preexec=None) -> str:
    """Write `files` into a scratch dir, run `cmd` there, return the cleaned console output."""
    with tempfile.TemporaryDirectory(prefix="ttex-") as tmp:
        os.chmod(tmp, 0o755)
        for name, body in files.items():
            path = pathlib.Path(tmp) / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
        full_env = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        proc = subprocess.run([str(c) for c in cmd], cwd=tmp, env=full_env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout, preexec_fn=preexec)
        return clean(proc.stdout, tmp, project)


def write(entry_id: str, name: str, text: str) -> None:
    out = KB_EXAMPLES / entry_id / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"{out.relative_to(ROOT)}: {len(text.splitlines())} lines")

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
    write(ID, "positive-1.log", run(files, [PY, "train.py", "--mode", "glob"], project="/home/yuki/catsdogs"))
    write(ID, "positive-2.log", run(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                            "train.py", "--mode", "filter"], project="/home/yuki/lm-small"))
    write(ID, "negative-1.log", run(files, [PY, "train.py", "--mode", "ok"], project="/home/yuki/catsdogs"))
