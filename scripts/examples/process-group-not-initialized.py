#!/usr/bin/env python
"""Regenerate the examples of `process-group-not-initialized` with real runs on CPU.

positive-1: a torchrun script builds its DistributedSampler before init_process_group.
positive-2: a torchrun-only script started with plain `python` (KeyError: 'LOCAL_RANK').
positive-3: `srun --label` without exporting RANK/WORLD_SIZE/MASTER_ADDR (env:// init fails).
negative-1: a KeyError from the data pipeline in a healthy-looking launcher setup.

    .venv/bin/python scripts/examples/process-group-not-initialized.py
"""

from _runner import SRUN_EPILOGUE, labeled, python_console, torchrun_console, write_log

SAMPLER_FIRST = r'''
import logging, os
import torch, torch.distributed as dist
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
log.info("loading dataset from data/train.bin")
ds = TensorDataset(torch.randn(512, 16), torch.randint(0, 4, (512,)))
sampler = DistributedSampler(ds, shuffle=True)  # bug: before init_process_group
loader = DataLoader(ds, batch_size=32, sampler=sampler)
dist.init_process_group("gloo")
'''

LOCAL_RANK_FIRST = r'''
import argparse, os
import torch, torch.distributed as dist

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=3)
args = parser.parse_args()
print(f"args: {vars(args)}")
local_rank = int(os.environ["LOCAL_RANK"])
dist.init_process_group("gloo")
'''

ENV_INIT = r'''
import os, socket
import torch, torch.distributed as dist
print(f"{socket.gethostname()} SLURM_PROCID={os.environ.get('SLURM_PROCID')} starting", flush=True)
dist.init_process_group(backend="gloo", init_method="env://")
'''

NEGATIVE = r'''
import logging, os
import torch, torch.distributed as dist
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")
dist.init_process_group("gloo")
local_rank = int(os.environ["LOCAL_RANK"])
log.info("rank %d/%d local_rank %d initialised", dist.get_rank(), dist.get_world_size(), local_rank)

def collate(batch):
    return {"input_ids": torch.stack([b["input_ids"] for b in batch]),
            "labels": torch.stack([b["labels"] for b in batch])}

batch = [{"input_ids": torch.arange(8), "label": torch.tensor(1)} for _ in range(4)]
collate(batch)
'''

if __name__ == "__main__":
    ID = "process-group-not-initialized"
    write_log(ID, "positive-1.log", torchrun_console(SAMPLER_FIRST, ["--nproc-per-node", "2", "--tee", "3"]))
    write_log(ID, "positive-2.log", python_console(LOCAL_RANK_FIRST))
    write_log(ID, "positive-3.log", labeled(ENV_INIT, 2, "{rank}: ", dist_env=False, epilogue=SRUN_EPILOGUE))
    write_log(ID, "negative-1.log", torchrun_console(NEGATIVE, ["--nproc-per-node", "2"]))
