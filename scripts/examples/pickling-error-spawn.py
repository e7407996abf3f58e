"""Regenerate real examples for pickling-error-spawn (CPU, DataLoader workers under the spawn start method).

positive-1.log: single process, DataLoader(multiprocessing_context="spawn") with a collate_fn that is a
    lambda defined inside main(): "AttributeError: Can't pickle local object 'main.<locals>.<lambda>'".
positive-2.log: 2 ranks under `torchrun --standalone --tee 3`, spawn context, the Dataset keeps an open
    file handle: "TypeError: cannot pickle '_io.BufferedReader' object" on every rank.
positive-3.log: a module-level lambda transform under spawn:
    "_pickle.PicklingError: Can't pickle <function <lambda> at 0x...>: attribute lookup <lambda> on __main__ failed".
negative-1.log: torch.load(weights_only=False) of a whole pickled model whose class is not importable:
    "AttributeError: Can't get attribute 'TinyNet' on <module '__main__' ...>" (a checkpoint problem).

Run: .venv/bin/python scripts/examples/pickling-error-spawn.py
"""
from __future__ import annotations

from _runner import PY, TORCHRUN, run_cleaned, write_log

ID = "pickling-error-spawn"

TRAIN = r'''
import logging, os, sys
import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset

MODE = sys.argv[1]
logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("finetune")
DIST = "RANK" in os.environ
RANK = int(os.environ.get("RANK", 0))

normalize = lambda t: (t - t.mean()) / (t.std() + 1e-6)


class TokenShards(Dataset):
    def __init__(self, path, transform=None):
        self.fh = open(path, "rb") if MODE == "filehandle" else None
        self.transform = transform

    def __len__(self):
        return 4096

    def __getitem__(self, i):
        x = torch.randn(128)
        return self.transform(x) if self.transform else x


def main():
    if DIST:
        dist.init_process_group("gloo")
    torch.save(torch.arange(10), "shard-00000.bin")
    ds = TokenShards("shard-00000.bin", transform=normalize if MODE == "module-lambda" else None)
    kwargs = dict(batch_size=16, num_workers=2, multiprocessing_context="spawn")
    if MODE == "local-lambda":
        kwargs["collate_fn"] = lambda batch: torch.stack(batch)
    loader = DataLoader(ds, **kwargs)
    log.info("rank %d: %d batches per epoch, workers use start method 'spawn'", RANK, len(loader))
    model = torch.nn.Linear(128, 8)
    for step, x in enumerate(loader):
        model(x).sum().backward()
        if step == 3:
            break


if __name__ == "__main__":
    main()
'''

SAVE = r'''
import torch

class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 2)

torch.save(TinyNet(), "model_full.pt")
print("saved model_full.pt")
'''

LOAD = r'''
import logging
import torch

logging.basicConfig(format="%(asctime)s %(levelname)s [%(name)s] %(message)s", level=logging.INFO)
log = logging.getLogger("evaluate")
log.info("loading model from model_full.pt")
model = torch.load("model_full.pt", map_location="cpu", weights_only=False)
model.eval()
'''

if __name__ == "__main__":
    files = {"train.py": TRAIN}
    write_log(ID, "positive-1.log", run_cleaned(files, [PY, "train.py", "local-lambda"], project="/home/ana/projects/seg"))
    write_log(ID, "positive-2.log", run_cleaned(files, [TORCHRUN, "--standalone", "--nproc-per-node", "2", "--tee", "3",
                                                        "train.py", "filehandle"], project="/home/ana/projects/seg"))
    write_log(ID, "positive-3.log", run_cleaned(files, [PY, "train.py", "module-lambda"], project="/home/ana/projects/seg"))
    write_log(ID, "negative-1.log", run_cleaned({"save.py": SAVE, "evaluate.py": LOAD},
                                                ["sh", "-c", f"{PY} save.py >/dev/null && {PY} evaluate.py"],
                                                project="/home/ana/projects/seg"))
