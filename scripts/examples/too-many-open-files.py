"""Regenerate real examples for too-many-open-files (CPU, DataLoader workers, torchrun + gloo).

The open-file limit is lowered (as on hosts/containers with the default `ulimit -n 1024` and a
loader that passes many tensors per batch) so that it is reached within seconds:
positive-1.log: single process; an evaluation loop keeps every batch (each tensor received from a
    worker holds a file descriptor under the default 'file_descriptor' sharing strategy) until the
    main process runs out: "RuntimeError: received 0 items of ancdata".
positive-2.log: 2 ranks under `torchrun --standalone --tee 3` inside `ulimit -n 256`; workers can no longer
    share tensors: "unable to open shared memory object <...> in read-write mode: Too many open files (24)"
    and "OSError: [Errno 24] Too many open files".
positive-3.log: a Dataset that opens one file per sample and never closes it (leak) while the loop keeps
    its batches, under `ulimit -n 256`; the main process hits the limit first and torch's own check
    reports "RuntimeError: Too many open files. Communication with the workers is no longer possible...".
negative-1.log: a worker killed by SIGBUS (/dev/shm exhausted): dataloader-shm-exhausted, not EMFILE.

Run: .venv/bin/python scripts/examples/too-many-open-files.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, run_cleaned, write_log

ID = "too-many-open-files"

TRAIN = r'''
import logging, os, resource, signal, sys
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

MODE = sys.argv[1]
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("eval" if MODE == "ancdata" else "train")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


class Graphs(Dataset):
    """Each sample is a list of per-node feature tensors (molecular graphs, point clouds, ...)."""

    def __init__(self, root):
        self.root = root

    def __len__(self):
        return 20_000

    def __getitem__(self, i):
        if MODE == "leak":
            fh = open(os.path.join(self.root, f"mol_{i % 500:05d}.bin"), "rb")  # never closed
            fh.read(16)
            return torch.randn(32)
        if MODE == "sigbus" and i == 70:
            os.kill(os.getpid(), signal.SIGBUS)
        return [torch.randn(16) for _ in range(40 if MODE == "ancdata" else 60)]


def main():
    if DIST:
        dist.init_process_group("gloo")
    root = "graphs"
    os.makedirs(root, exist_ok=True)
    if MODE == "leak":
        for k in range(500):
            with open(os.path.join(root, f"mol_{k:05d}.bin"), "wb") as f:
                f.write(os.urandom(64))
    loader = DataLoader(Graphs(root), batch_size=None if MODE != "leak" else 16, num_workers=2,
                        prefetch_factor=2 if MODE == "ancdata" else 8)
    log.info("rank %d: %d samples, num_workers=%d, sharing strategy=%s", RANK, len(loader.dataset),
             loader.num_workers, torch.multiprocessing.get_sharing_strategy())
    it = iter(loader)
    if MODE == "ancdata":
        resource.setrlimit(resource.RLIMIT_NOFILE, (200, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
    outputs = []
    for step, batch in enumerate(it, 1):
        outputs.append(batch)  # kept for metric computation at the end of the epoch
        if step % 10 == 0:
            log.info("rank %d: processed %d batches", RANK, step)
        if step == 400:
            break
    log.info("done")


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write_log(ID, "positive-1.log", run_cleaned(files, [PY, "train.py", "ancdata"], project="/scratch/jdoe/molgen"))
    write_log(ID, "positive-2.log", run_cleaned(files, ["sh", "-c", f"ulimit -n 256 && exec {TORCHRUN} --standalone --nproc-per-node 2 "
                                                        "--tee 3 train.py fd-sharing"], project="/scratch/jdoe/molgen"))
    write_log(ID, "positive-3.log", run_cleaned(files, ["sh", "-c", f"ulimit -n 256 && exec {PY} train.py leak"],
                                                project="/scratch/jdoe/molgen"))
    write_log(ID, "negative-1.log", run_cleaned(files, [PY, "train.py", "sigbus"], project="/scratch/jdoe/molgen"))
