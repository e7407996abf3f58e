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

def drop_injected_frame(text: str) -> str:
    """Remove the two traceback lines of the injected frame (libshm raises from C++, no Python frame)."""
    lines = text.splitlines()
    out, skip = [], 0
    for ln in lines:
        if skip:
            skip -= 1
            continue
        if "in _new_using_fd_cpu" in ln and "train.py" in ln:
            skip = 1
            continue
        out.append(ln)
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write(ID, "positive-1.log", run(files, [PY, "train.py", "sigbus", "0", "130"], project="/home/user/video-ssl"))
    write(ID, "positive-2.log", run(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2",
                                            "train.py", "sigbus", "1", "90"], project="/home/user/video-ssl"))
    write(ID, "positive-3.log", drop_injected_frame(run(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                            "train.py", "enospc", "0", "0"], project="/home/user/video-ssl")))
    write(ID, "negative-1.log", run(files, [PY, "train.py", "sigkill", "0", "100"], project="/home/user/video-ssl"))
