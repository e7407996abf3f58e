#!/usr/bin/env python
"""Regenerate the examples of `process-group-initialized-twice` with real runs on CPU (gloo).

positive-1: torchrun, 2 ranks: the script initialises the process group itself and then calls
            a helper (as framework setup code does) that initialises it again.
positive-2: srun --label style, 2 tasks: a training loop that re-initialises the group for
            every "fold"/"stage" without destroying it first.
negative-1: the same helper guarded with `dist.is_initialized()`: it logs that the group
            already exists and training completes.

    .venv/bin/python scripts/examples/process-group-initialized-twice.py
"""

from _runner import SRUN_EPILOGUE, labeled, torchrun_console, write_log

WORKER = r'''
import logging, os
import torch, torch.distributed as dist

MODE = os.environ.get("EXAMPLE_MODE", "helper")
logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO)
log = logging.getLogger("train")


def init_distributed_mode():
    """What many training repos' utils.init_distributed_mode() does."""
    if MODE == "guarded" and dist.is_initialized():
        log.info("process group already initialized (rank %d), skipping", dist.get_rank())
        return
    dist.init_process_group(backend="gloo", init_method="env://")
    log.info("| distributed init (rank %d): env://", dist.get_rank())


if MODE in ("helper", "guarded"):
    dist.init_process_group(backend="gloo")          # the script's own init ...
    init_distributed_mode()                          # ... and the helper's
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
    for step in range(1, 4):
        model(torch.randn(4, 8)).sum().backward()
        log.info("step %d done", step)
    dist.destroy_process_group()
else:  # "folds": a new group per cross-validation fold without destroy_process_group()
    for fold in range(3):
        log.info("fold %d: initialising process group", fold)
        dist.init_process_group(backend="gloo")
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(8, 2))
        model(torch.randn(4, 8)).sum().backward()
        log.info("fold %d: finished", fold)
'''

if __name__ == "__main__":
    ID = "process-group-initialized-twice"
    write_log(ID, "positive-1.log", torchrun_console(WORKER, ["--nproc-per-node", "2", "--tee", "3"]))
    write_log(ID, "positive-2.log", labeled(WORKER, 2, "{rank}: ", env={"EXAMPLE_MODE": "folds"}, epilogue=SRUN_EPILOGUE))
    write_log(ID, "negative-1.log", torchrun_console(WORKER, ["--nproc-per-node", "2", "--tee", "3"], env={"EXAMPLE_MODE": "guarded"}))
