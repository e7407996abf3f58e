"""Regenerate real examples for dataloader-timeout (CPU, torch DataLoader(timeout=...), torchrun + gloo).

positive-1.log: single process; one worker blocks on a slow read (simulated remote storage stall)
    longer than DataLoader(timeout=10): "RuntimeError: DataLoader timed out after 10 seconds".
positive-2.log: 2 ranks under `torchrun --standalone --tee 3`; rank 1's loader stalls past its
    timeout=6, rank 0 then loses its peer in the all-reduce; ChildFailedError report.
negative-1.log: same stall but *no* DataLoader timeout: rank 0's gloo collective times out
    instead (process-group timeout, not the DataLoader's). A hang/collective-timeout class.

Run: .venv/bin/python scripts/examples/dataloader-timeout.py
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

ID = "dataloader-timeout"

TRAIN = r'''
import datetime, logging, os, sys, time
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

STALL_RANK, STALL_INDEX, LOADER_TIMEOUT = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
logging.basicConfig(format="%(asctime)s | %(levelname)-8s | %(name)s:%(lineno)d - %(message)s", level=logging.INFO)
log = logging.getLogger("train")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


class RemoteShards(Dataset):
    """Reads samples from object storage; one read stalls (throttled bucket, hung NFS server)."""

    def __len__(self):
        return 200_000

    def __getitem__(self, i):
        if RANK == STALL_RANK and i == STALL_INDEX:
            time.sleep(60)
        return torch.randn(512), torch.randn(512)


def main():
    if DIST:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=8))
    model = torch.nn.Sequential(torch.nn.Linear(512, 1024), torch.nn.GELU(), torch.nn.Linear(1024, 512))
    if DIST:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    loader = DataLoader(RemoteShards(), batch_size=32, num_workers=2, timeout=LOADER_TIMEOUT, prefetch_factor=2)
    log.info("rank %d: loader ready (num_workers=2, timeout=%ss)", RANK, LOADER_TIMEOUT)
    t0 = time.time()
    for step, (x, y) in enumerate(loader, 1):
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if RANK == 0 and step % 10 == 0:
            log.info("step %5d | loss %.5f | %.1f samples/s", step, loss.item(), step * 32 / (time.time() - t0))
        if step == 200:
            break
    if DIST:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write(ID, "positive-1.log", run(files, [PY, "train.py", "0", "1700", "10"], project="/mnt/home/ml/regress"))
    write(ID, "positive-2.log", run(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                            "train.py", "1", "900", "6"], project="/mnt/home/ml/regress"))
    write(ID, "negative-1.log", run(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2",
                                            "train.py", "1", "900", "0"], project="/mnt/home/ml/regress"))
