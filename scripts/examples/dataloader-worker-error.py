"""Regenerate real examples for dataloader-worker-error (CPU).

positive-1.log: single process, DataLoader(num_workers=2); the Dataset's __getitem__
  raises ValueError on one malformed record: "Caught ValueError in DataLoader worker
  process N" with the worker's original traceback.
positive-2.log: 2 ranks under `torchrun --tee 3`, 2 workers each; a KeyError on a record
  without a "label" field in rank 1's shard (KeyError is re-raised with its message
  repr-quoted).
negative-1.log: a worker killed by SIGKILL (what the OOM killer does): the main process
  reports "DataLoader worker (pid(s) ...) exited unexpectedly" - that is
  dataloader-worker-killed, not an exception inside the worker.

Run: .venv/bin/python scripts/examples/dataloader-worker-error.py
"""

from __future__ import annotations

from _runner import PY, TORCHRUN, run_logged

ID = "dataloader-worker-error"

TRAIN = r'''
import json, os, signal, sys
import torch
from torch.utils.data import DataLoader, Dataset

MODE = sys.argv[1]


class JsonlDataset(Dataset):
    def __init__(self, n=512, bad=None):
        self.n, self.bad = n, bad

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if MODE == "value" and i == self.bad:
            line = '{"text": "lorem ipsum", "label": "n/a"}'
        else:
            line = json.dumps({"text": "lorem ipsum", "label": i % 5})
        rec = json.loads(line)
        if MODE == "key" and i == self.bad:
            rec.pop("label")
        if MODE == "kill" and i == self.bad:
            os.kill(os.getpid(), signal.SIGKILL)
        label = int(rec["label"])
        return torch.randn(64), torch.tensor(label)


if MODE == "key":
    import torch.distributed as dist
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    ds = JsonlDataset(bad=300 if rank == 1 else None)
else:
    rank = 0
    ds = JsonlDataset(bad=200)
loader = DataLoader(ds, batch_size=32, num_workers=2)
model = torch.nn.Linear(64, 5)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for step, (x, y) in enumerate(loader):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step(); opt.zero_grad()
        if step % 2 == 0:
            print(f"[rank {rank}] epoch {epoch} step {step}/{len(loader)} loss {loss.item():.4f}",
                  flush=True)
'''


if __name__ == "__main__":
    files = {"train.py": TRAIN}
    run_logged(ID, "positive-1.log", [PY, "train.py", "value"], files=files)
    run_logged(ID, "positive-2.log", [TORCHRUN, "--nproc-per-node", "2", "--master-port", "29691", "--tee", "3",
                                      "train.py", "key"], files=files)
    run_logged(ID, "negative-1.log", [PY, "train.py", "kill"], files=files)
