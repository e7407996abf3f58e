"""Regenerate real examples for dataloader-worker-killed (CPU, torch DataLoader, torchrun + gloo).

positive-1.log: 2 ranks under `torchrun --standalone --tee 3`; on rank 1 a DataLoader worker is
    SIGKILLed mid-epoch (what the kernel OOM killer does to a worker); rank 0 then loses its peer
    in the gradient all-reduce and torchrun prints its ChildFailedError report.
positive-2.log: single process, a worker segfaults (SIGSEGV, e.g. a native decoder crash).
positive-3.log: single process, a worker exits with status 1 (a library calls exit()).
negative-1.log: the training process itself (not a DataLoader worker) is SIGKILLed under torchrun:
    host-oom-killed / worker-killed-by-signal territory, no DataLoader message.

Run: .venv/bin/python scripts/examples/dataloader-worker-killed.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, run_cleaned, write_log

ID = "dataloader-worker-killed"

TRAIN = r'''
import logging, os, signal, sys, time
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

MODE, BAD_RANK, BAD_INDEX = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("train")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))


class ShardDataset(Dataset):
    def __len__(self):
        return 100_000

    def __getitem__(self, i):
        if RANK == BAD_RANK and i == BAD_INDEX and MODE != "main-kill":
            if MODE == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif MODE == "sigsegv":
                os.kill(os.getpid(), signal.SIGSEGV)
            elif MODE == "exit":
                sys.exit(1)
        return torch.randn(3, 32, 32), int(i % 10)


def main():
    if DIST:
        dist.init_process_group("gloo")
    model = torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(3 * 32 * 32, 10))
    if DIST:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    loader = DataLoader(ShardDataset(), batch_size=16, num_workers=4, shuffle=False, persistent_workers=True)
    if RANK == 0:
        log.info("dataset size=%d, batches/epoch=%d, num_workers=%d", len(loader.dataset), len(loader), loader.num_workers)
    for step, (x, y) in enumerate(loader, 1):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if RANK == 0 and step % 5 == 0:
            log.info("epoch 0 step %d/%d loss %.4f lr 3.00e-04", step, len(loader), loss.item())
        if MODE == "main-kill" and RANK == BAD_RANK and step == 12:
            os.kill(os.getpid(), signal.SIGKILL)
        if step == 60:
            break
    if DIST:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
'''

if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write_log(ID, "positive-1.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                                        "train.py", "sigkill", "1", "170"]))
    write_log(ID, "positive-2.log", run_cleaned(files, [PY, "train.py", "sigsegv", "0", "330"]))
    write_log(ID, "positive-3.log", run_cleaned(files, [PY, "train.py", "exit", "0", "250"]))
    write_log(ID, "negative-1.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2",
                                                        "train.py", "main-kill", "1", "0"]))
