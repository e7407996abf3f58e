#!/usr/bin/env python3
"""Regenerate src/traintriage/kb/examples/cuda-fork-reinit/positive-{1,2}.log from real runs.

positive-1.log: a single-process training script whose Dataset creates a CUDA tensor in
                __getitem__, with num_workers=2 (fork).
positive-2.log: the same script under `torchrun --nproc_per_node 2` (gloo, CPU).

The `Caught RuntimeError in DataLoader worker process N` wrapper, the Original
Traceback and the `Cannot re-initialize CUDA in forked subprocess` message are raised
by the real torch.utils.data and torch.cuda._lazy_init code of the installed PyTorch.
This machine has no GPU, so the parent cannot really initialise CUDA before forking;
instead the script installs an os.register_at_fork(after_in_child=...) hook that marks
the child as a bad fork, which is what PyTorch's own pthread_atfork handler does on a
GPU machine once CUDA is initialised in the parent.

Usage: .venv/bin/python scripts/examples/cuda-fork-reinit.py
"""

from __future__ import annotations

from _runner import PY, QUIET_ENV, TORCHRUN, clean_console, run, write_log

ID = "cuda-fork-reinit"

WORKER = r'''
import os
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset


def _mark_bad_fork() -> None:
    # On a GPU host PyTorch's pthread_atfork handler does this when CUDA is initialised
    # in the parent (model.cuda() below); on this CPU-only host we set the same flag.
    torch.cuda._is_in_bad_fork = lambda: True


os.register_at_fork(after_in_child=_mark_bad_fork)


class ImageFeatures(Dataset):
    def __init__(self, n: int) -> None:
        self.n = n

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, i: int):
        x = torch.randn(3, 32, 32)
        # "normalise on the GPU" - the bug: CUDA work inside a forked DataLoader worker
        mean = torch.tensor([0.485, 0.456, 0.406], device="cuda").view(3, 1, 1)
        return (x - mean), i % 10


def main() -> None:
    rank = int(os.environ.get("RANK", "0"))
    if "RANK" in os.environ:
        import torch.distributed as dist
        dist.init_process_group("gloo")
    model = nn.Sequential(nn.Flatten(), nn.Linear(3 * 32 * 32, 10))  # model.cuda() on a GPU host
    loader = DataLoader(ImageFeatures(512), batch_size=32, shuffle=True, num_workers=2)
    if rank == 0:
        print(f"Training samples: 512 | batches per epoch: {len(loader)} | workers: 2", flush=True)
        print("Epoch 1/10", flush=True)
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()


if __name__ == "__main__":
    main()
'''


def save_run(name: str, cmd: list[object], header: str = "") -> None:
    result = run(cmd, files={"train_classifier.py": WORKER}, env=QUIET_ENV, prefix="tt-example-")
    write_log(ID, name, header + clean_console(result.output, result.workdir, "/home/user/cls"), result.returncode)


if __name__ == "__main__":
    save_run("positive-1.log", [PY, "{tmp}/train_classifier.py"], header="$ python train_classifier.py\n")
    save_run("positive-2.log", [TORCHRUN, "--nproc_per_node", "2", "--master_port", "29671",
                                "{tmp}/train_classifier.py"])
