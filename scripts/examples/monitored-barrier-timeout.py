#!/usr/bin/env python
"""Regenerate the examples of `monitored-barrier-timeout` with real gloo jobs on CPU.

`torch.distributed.monitored_barrier()` (gloo only) makes rank 0 collect an ack from every
other rank within a timeout and name the ranks that did not arrive. Here one rank is stuck
(a blocked lock standing in for a hung data read) when the others reach the barrier.

positive-1: torchrun --tee 3, 4 ranks, rank 3 stuck; wait_all_ranks=False (first missing rank).
positive-2: srun --label, 4 ranks, ranks 1 and 2 stuck, wait_all_ranks=True (all missing ranks).
negative-1: a monitored_barrier that every rank passes, the job completes.

    .venv/bin/python scripts/examples/monitored-barrier-timeout.py
"""

from _runner import SRUN_EPILOGUE, labeled, torchrun_console, write_log

WORKER = r'''
import datetime, logging, os, sys, threading, time
import torch, torch.distributed as dist

STUCK = {int(r) for r in os.environ.get("STUCK_RANKS", "").split(",") if r}
WAIT_ALL = os.environ.get("WAIT_ALL") == "1"
logging.basicConfig(format=f"%(asctime)s [rank{os.environ['RANK']}] %(levelname)s %(name)s: %(message)s",
                    level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank = dist.get_rank()
lock = threading.Lock()
lock.acquire()
for epoch in range(2):
    time.sleep(0.5)
    log.info("epoch %d: training done, entering evaluation", epoch)
    if rank in STUCK and epoch == 1:
        lock.acquire()  # stuck: e.g. reading a shard from a hung mount
    dist.monitored_barrier(timeout=datetime.timedelta(seconds=8), wait_all_ranks=WAIT_ALL)
    log.info("epoch %d: all ranks reached evaluation barrier", epoch)
dist.destroy_process_group()
'''


if __name__ == "__main__":
    ID = "monitored-barrier-timeout"
    write_log(ID, "positive-1.log", torchrun_console(WORKER, ["--nproc-per-node", "4", "--tee", "3"], env={"STUCK_RANKS": "3"}))
    write_log(ID, "positive-2.log", labeled(WORKER, 4, "{rank}: ", env={"STUCK_RANKS": "1,2", "WAIT_ALL": "1"},
                                       epilogue=SRUN_EPILOGUE))
    write_log(ID, "negative-1.log", torchrun_console(WORKER, ["--nproc-per-node", "4", "--tee", "3"]))
