"""Regenerate real examples for disk-full (CPU, torch.save / json writes into /dev/full, torchrun + gloo).

/dev/full fails every write with ENOSPC exactly like a full filesystem, so the checkpoint path (or the
file being written) is made a symlink to it:
positive-1.log: 2 ranks under `torchrun --standalone --tee 3`; rank 0 saves with torch.save(state, f) into
    an open file: "OSError: [Errno 28] No space left on device" chained to torch's
    "[enforce fail at inline_container.cc:...] . unexpected pos ..."; rank 1 loses its peer.
positive-2.log: single process; torch.save(state, "path") (C++ writer): only "basic_ios::clear: iostream
    error" and "unexpected pos N vs M" reach the log - no errno text at all.
positive-3.log: single process; the tokenizer/config JSON written next to the weights fails:
    plain "OSError: [Errno 28] No space left on device".
negative-1.log: a DataLoader worker cannot allocate shared memory for a batch (/dev/shm full):
    "unable to write to file </torch_...>: No space left on device (28)" - dataloader-shm-exhausted.
    The frames are real; the failing libshm allocation is injected with torch's exact message.

Run: .venv/bin/python scripts/examples/disk-full.py
"""
from __future__ import annotations

import os

from _runner import PY, TORCHRUN, drop_injected_frame, run_cleaned, write_log

ID = "disk-full"

TRAIN = r'''
import json, logging, os, random, sys
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

MODE = sys.argv[1]
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("train")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))
OUT = "checkpoints"


def save(step, model, opt):
    path = os.path.join(OUT, f"step_{step:06d}.pt")
    log.info("saving checkpoint to %s", path)
    state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}
    if MODE == "fileobj":
        with open(path, "wb") as f:
            torch.save(state, f)
    elif MODE == "path":
        torch.save(state, path)
    else:
        torch.save(state, path.replace(".pt", ".bin"))
        with open(os.path.join(OUT, "config.json"), "w") as f:
            json.dump({"hidden_size": 256, "num_layers": 4, "vocab_size": 32000, "step": step,
                       "optimizer": {"name": "adamw", "lr": 3e-4, "betas": [0.9, 0.95]}} | {f"extra_{k}": k for k in range(4000)}, f, indent=2)
        log.info("wrote %s", os.path.join(OUT, "config.json"))


class Batches(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        return torch.randn(256)


def worker_init(worker_id):
    if MODE != "shm":
        return
    real = torch.UntypedStorage._new_using_fd_cpu
    state = {"n": 0}

    def _new_using_fd_cpu(cls, size):
        state["n"] += 1
        if state["n"] >= 9:
            name = f"/torch_{os.getpid()}_{random.randint(10**9, 4 * 10**9)}_{state['n']}"
            raise RuntimeError(f"unable to write to file <{name}>: No space left on device (28)")
        return real(size)

    torch.UntypedStorage._new_using_fd_cpu = classmethod(_new_using_fd_cpu)


def main():
    if DIST:
        dist.init_process_group("gloo")
    model = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(4)])
    if DIST:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(Batches(), batch_size=64, num_workers=2 if MODE == "shm" else 0, worker_init_fn=worker_init)
    for step, x in enumerate(loader, 1):
        loss = model(x).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if RANK == 0 and step % 10 == 0:
            log.info("step %d | loss %.4f | lr 3.0e-04", step, loss.item())
        if step % 30 == 0 and RANK == 0:
            save(step, model, opt)
        if step % 30 == 0 and DIST:
            dist.barrier()
        if step == 60:
            break


if __name__ == "__main__":
    main()
'''


def full_disk_run(cmd, project, full_files):
    """run_cleaned() with the given checkpoint files pre-created as symlinks to /dev/full."""
    def setup(tmp):
        (tmp / "checkpoints").mkdir()
        for name in full_files:
            os.symlink("/dev/full", tmp / "checkpoints" / name)
    return run_cleaned({"train.py": TRAIN}, cmd, project=project, setup=setup)


if __name__ == "__main__":
    write_log(ID, "positive-1.log", full_disk_run([TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                                   "train.py", "fileobj"], "/lustre/proj/llm-pretrain", ["step_000030.pt"]))
    write_log(ID, "positive-2.log", full_disk_run([PY, "train.py", "path"], "/home/sam/vision", ["step_000060.pt"]))
    write_log(ID, "positive-3.log", full_disk_run([PY, "train.py", "json"], "/home/sam/lm", ["config.json"]))
    write_log(ID, "negative-1.log", drop_injected_frame(full_disk_run([PY, "train.py", "shm"], "/home/sam/lm", [])))
