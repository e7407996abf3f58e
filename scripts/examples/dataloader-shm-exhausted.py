"""Regenerate real examples for dataloader-shm-exhausted (CPU, torch DataLoader).

/dev/shm cannot be shrunk on this machine (no mounts), so the two failure paths are driven
from inside a real DataLoader worker:
positive-1.log: single process; a worker receives SIGBUS, which is exactly what happens when it
    touches a page of a /dev/shm-backed tensor that the tmpfs cannot back. torch's worker
    signal handler and the main process print their real messages.
positive-2.log: the same under `torchrun --standalone` with 2 ranks (no --tee: `[rank1]:` prefixes
    on the Python traceback only; the C-level worker message has no prefix).
positive-3.log: 2 ranks under `torchrun --tee 3`; the worker fails while collating a batch into
    shared memory. The frames are real (default_collate -> _new_shared); the failing allocation is
    replaced by a RuntimeError carrying the message torch's libshm prints for ENOSPC
    ("unable to write to file <...>: No space left on device (28)").
negative-1.log: a worker SIGKILLed (host OOM killer): dataloader-worker-killed, not shm.

Run: .venv/bin/python scripts/examples/dataloader-shm-exhausted.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, drop_injected_frame, run_cleaned, write_log

ID = "dataloader-shm-exhausted"

TRAIN = r'''
import logging, os, random, signal, sys
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

MODE, BAD_RANK, BAD_INDEX = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
logging.basicConfig(format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s", level=logging.INFO)
log = logging.getLogger("trainer")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


class VideoClips(Dataset):
    def __len__(self):
        return 50_000

    def __getitem__(self, i):
        if RANK == BAD_RANK and i == BAD_INDEX:
            if MODE == "sigbus":
                os.kill(os.getpid(), signal.SIGBUS)
            elif MODE == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
        return torch.randn(8, 3, 64, 64), int(i % 400)


def worker_init(worker_id):
    if MODE != "enospc" or RANK != BAD_RANK:
        return
    # Reproduce libshm's ENOSPC failure on the 6th shared-memory allocation of this worker.
    real = torch.UntypedStorage._new_using_fd_cpu
    state = {"n": 0}

    def _new_using_fd_cpu(cls, size):
        state["n"] += 1
        if state["n"] >= 6:
            name = f"/torch_{os.getpid()}_{random.randint(10**9, 4 * 10**9)}_{state['n']}"
            raise RuntimeError(f"unable to write to file <{name}>: No space left on device (28)")
        return real(size)

    torch.UntypedStorage._new_using_fd_cpu = classmethod(_new_using_fd_cpu)


def main():
    if DIST:
        dist.init_process_group("gloo")
    model = torch.nn.Sequential(torch.nn.Conv3d(8, 4, 3), torch.nn.AdaptiveAvgPool3d(1), torch.nn.Flatten(), torch.nn.Linear(4, 400))
    if DIST:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(VideoClips(), batch_size=8, num_workers=2, worker_init_fn=worker_init)
    if RANK == 0:
        log.info("Train loader: %d clips, %d iterations/epoch", len(loader.dataset), len(loader))
    for it, (x, y) in enumerate(loader, 1):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if RANK == 0 and it % 4 == 0:
            log.info("Epoch: [0][%d/%d]  loss %.4f  lr 0.050000", it, len(loader), loss.item())
        if it == 40:
            break
    if DIST:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write_log(ID, "positive-1.log", run_cleaned(files, [PY, "train.py", "sigbus", "0", "130"], project="/home/user/video-ssl"))
    write_log(ID, "positive-2.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2",
                                                        "train.py", "sigbus", "1", "90"], project="/home/user/video-ssl"))
    write_log(ID, "positive-3.log", drop_injected_frame(run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                                        "train.py", "enospc", "0", "0"], project="/home/user/video-ssl")))
    write_log(ID, "negative-1.log", run_cleaned(files, [PY, "train.py", "sigkill", "0", "100"], project="/home/user/video-ssl"))
