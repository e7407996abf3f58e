#!/usr/bin/env python
"""Regenerate the examples of `ddp-model-mismatch` by running real DDP jobs on CPU (gloo).

Rank 1 builds a different model than rank 0 (an extra layer, or a different hidden size
read from a per-rank config), which DDP's constructor detects in
_verify_param_shape_across_processes. The negative example is a single process loading a
checkpoint into a model of a different size (state-dict mismatch: same words, other class).

    .venv/bin/python scripts/examples/ddp-model-mismatch.py
"""

from _runner import MPIRUN_EPILOGUE, labeled, python_console, torchrun_console, write_log

WORKER = r'''
import logging, os
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

MODE = os.environ.get("EXAMPLE_MODE", "extra-layer")
logging.basicConfig(format="%(asctime)s - %(levelname)s - %(name)s - %(message)s", level=logging.INFO)
log = logging.getLogger("train")

dist.init_process_group("gloo")
rank = dist.get_rank()
# The bug: the model is built from something that differs per rank (a config file read
# before it is fully written, an `if rank == 0:` branch, a per-host default).
hidden = 64
use_adapter = False
if MODE == "extra-layer" and rank == 1:
    use_adapter = True
if MODE == "hidden-size" and rank % 2 == 1:
    hidden = 48
log.info("rank %d: building model hidden=%d use_adapter=%s", rank, hidden, use_adapter)
layers = [nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 10)]
if use_adapter:
    layers += [nn.Linear(10, 10)]
model = nn.Sequential(*layers)
model = DDP(model)
log.info("rank %d: wrapped in DDP", rank)
dist.destroy_process_group()
'''

NEGATIVE = r'''
import torch, torch.nn as nn
ckpt = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 10)).state_dict()
model = nn.Sequential(nn.Linear(32, 48), nn.ReLU(), nn.Linear(48, 10))
print("Loading checkpoint from checkpoints/step_2000/model.pt")
model.load_state_dict(ckpt)
'''


if __name__ == "__main__":
    ID = "ddp-model-mismatch"
    write_log(ID, "positive-1.log", torchrun_console(WORKER, ["--nproc-per-node", "2", "--tee", "3"]))
    write_log(ID, "positive-2.log", labeled(WORKER, 4, "[1,{rank}]<{stream}>:", env={"EXAMPLE_MODE": "hidden-size"},
                                        epilogue=MPIRUN_EPILOGUE))
    write_log(ID, "negative-1.log", python_console(NEGATIVE))
