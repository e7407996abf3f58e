#!/usr/bin/env python
"""Regenerate the examples of `ddp-mark-ready-twice` by running real DDP jobs on CPU (gloo).

A weight-shared block is wrapped twice in reentrant activation checkpointing
(`checkpoint(..., use_reentrant=True)`) under DDP with find_unused_parameters=True: the
shared parameters' autograd hooks fire once per reentrant backward and DDP's Reducer
raises "Expected to mark a variable ready only once". The negative example is the
neighbouring class (an unused parameter without find_unused_parameters).

    .venv/bin/python scripts/examples/ddp-mark-ready-twice.py
"""

from _runner import SRUN_EPILOGUE, labeled, torchrun_console, write_log

WORKER = r'''
import logging, os, time
import torch, torch.distributed as dist, torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

MODE = os.environ.get("EXAMPLE_MODE", "reentrant")
logging.basicConfig(format=f"%(asctime)s [rank{os.environ['RANK']}] %(levelname)s %(name)s: %(message)s",
                    level=logging.INFO)
log = logging.getLogger("train")


class SharedBlockNet(nn.Module):
    """ALBERT-style: one encoder block applied twice (shared weights), checkpointed."""

    def __init__(self, d=32):
        super().__init__()
        self.embed = nn.Linear(16, d)
        self.block = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.head = nn.Linear(d, 4)
        self.aux = nn.Linear(d, 4)  # only used by the "unused" negative

    def forward(self, x):
        h = self.embed(x)
        for _ in range(2):
            if MODE == "reentrant":
                h = h + checkpoint(self.block, h, use_reentrant=True)
            else:
                h = h + self.block(h)
        return self.head(h)


dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
model = SharedBlockNet()
ddp = DDP(model, find_unused_parameters=(MODE == "reentrant"))
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
if rank == 0:
    log.info("world_size=%d params=%d gradient_checkpointing=%s find_unused_parameters=%s",
             world, sum(p.numel() for p in model.parameters()), MODE == "reentrant", MODE == "reentrant")
for step in range(1, 4):
    t0 = time.time()
    x = torch.randn(8, 16, requires_grad=(MODE == "reentrant"))
    y = torch.randint(0, 4, (8,))
    loss = nn.functional.cross_entropy(ddp(x), y)
    loss.backward()
    opt.step(); opt.zero_grad()
    log.info("step %d loss %.4f step_time %.1f ms", step, loss.item(), (time.time() - t0) * 1000)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    ID = "ddp-mark-ready-twice"
    write_log(ID, "positive-1.log", torchrun_console(WORKER, ["--nproc-per-node", "2", "--tee", "3"]))
    write_log(ID, "positive-2.log", labeled(WORKER, 4, "{rank}: ", epilogue=SRUN_EPILOGUE))
    write_log(ID, "negative-1.log", torchrun_console(WORKER, ["--nproc-per-node", "2", "--tee", "3"],
                                        env={"EXAMPLE_MODE": "unused-param"}))
