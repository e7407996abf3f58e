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

from _runner import PY, TORCHRUN, run_cleaned, write_log

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
    write_log(ID, "positive-1.log", run_cleaned(files, [PY, "train.py", "0", "1700", "10"], project="/mnt/home/ml/regress"))
    write_log(ID, "positive-2.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                                        "train.py", "1", "900", "6"], project="/mnt/home/ml/regress"))
    write_log(ID, "negative-1.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2",
                                                        "train.py", "1", "900", "0"], project="/mnt/home/ml/regress"))
