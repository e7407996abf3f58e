#!/usr/bin/env python
"""Regenerate the examples of `training-hang` with real `torchrun --nproc-per-node 4` gloo jobs on CPU.

Every rank logs `step N loss X step_time Y` lines with timestamps. At a given step one rank
stops making progress before the gradient all_reduce (it blocks forever: a stuck file read,
a deadlock, a dead data source). The other ranks block in the collective until the
process-group timeout (shortened to 20 s via init_process_group(timeout=...)) fires, the
failures propagate and the launcher tears the job down.

positive-1: torchrun --tee 3, rank 2 blocks in a stuck lock before the all_reduce of step 12.
positive-2: mpirun-style tags (--tag-output), rank 1's data loading never returns at step 9;
            faulthandler.dump_traceback_later() on every rank prints where each one is stuck.
positive-3: single process (python train.py), a DataLoader worker blocks forever on one
            sample; the user presses Ctrl-C after the run stops logging: KeyboardInterrupt
            stacks inside the DataLoader queue wait and worker shutdown.
todo-1:     the same single-process job interrupted with Ctrl-C while it is still making
            progress (a deliberate stop). Known miss: its last lines are identical to positive-3
            and carry no timestamp, so nothing in the log tells the two apart.
negative-1: one long pause (rank 0 writes a checkpoint for ~8 s while the others wait in a
            barrier) after which training resumes and completes: not a hang.

Each run is < 60 s.   .venv/bin/python scripts/examples/training-hang.py
"""

import signal
import subprocess
import sys
import time

from _runner import MPIRUN_EPILOGUE, PY, labeled, launch_env, torchrun_console, write_log, write_worker

WORKER = r'''
import datetime, faulthandler, logging, os, sys, threading, time
import torch, torch.distributed as dist, torch.nn as nn

MODE = os.environ.get("EXAMPLE_MODE", "lock")
rank_env = os.environ["RANK"]
logging.basicConfig(format=f"%(asctime)s [rank{rank_env}] %(levelname)s %(name)s: %(message)s",
                    level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
stuck = threading.Lock()
stuck.acquire()  # never released: whoever waits on it waits forever


def next_batch(step):
    if MODE == "dataloader" and rank == 1 and step == 9:
        log.info("fetching shard 00017 from object store")
        stuck.acquire()  # the remote read that never returns
    time.sleep(0.25)  # data loading + forward/backward of a real model
    return torch.randn(32, 64), torch.randint(0, 10, (32,))


if MODE == "dataloader":
    faulthandler.dump_traceback_later(12, exit=False)  # a common in-script hang detector

if rank == 0:
    log.info("world_size=%d steps=40 micro_batch=32 pg_timeout=20s", world)
for step in range(1, 41):
    t0 = time.time()
    x, y = next_batch(step)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    compute = time.time() - t0
    if MODE == "lock" and rank == 2 and step == 12:
        stuck.acquire()  # e.g. a lock held by a thread that died
    if MODE == "pause" and rank == 0 and step == 15:
        log.info("saving checkpoint to checkpoints/step_15 ...")
        time.sleep(8)
        log.info("checkpoint saved (8.0 s)")
    if MODE == "pause" and step == 15:
        dist.barrier()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world
    opt.step(); opt.zero_grad()
    if MODE == "dataloader":
        faulthandler.cancel_dump_traceback_later()
        faulthandler.dump_traceback_later(12, exit=False)
    log.info("step %d loss %.4f step_time %.3f s", step, loss.item(), time.time() - t0)
    if MODE == "pause" and step == 20:
        break
dist.destroy_process_group()
'''


CTRL_C_WORKER = r'''
import logging, sys, threading, time
import torch
from torch.utils.data import DataLoader, Dataset

logging.basicConfig(format="%(asctime)s %(levelname)s %(name)s: %(message)s", level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("train")
STUCK = threading.Event()
HEALTHY = __import__("os").environ.get("EXAMPLE_MODE") == "healthy"


class Shards(Dataset):
    def __len__(self):
        return 10_000

    def __getitem__(self, i):
        if i == 37 and not HEALTHY:      # a sample whose remote read never returns
            STUCK.wait()
        time.sleep(0.01)
        return torch.randn(32), i % 10


if __name__ == "__main__":
    model = torch.nn.Linear(32, 10)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = DataLoader(Shards(), batch_size=4, num_workers=2)
    for step, (x, y) in enumerate(loader, 1):
        t0 = time.time()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward(); opt.step(); opt.zero_grad()
        log.info("step %d loss %.4f step_time %.3f s", step, loss.item(), time.time() - t0)
'''


def ctrl_c_run(healthy: bool = False) -> str:
    """Run the single-process job, wait until it stops logging, then send SIGINT like a user.
    healthy=True: nothing blocks; the user interrupts a run that is still making progress."""
    script = write_worker(CTRL_C_WORKER)
    env = launch_env({"EXAMPLE_MODE": "healthy" if healthy else "stuck"})
    p = subprocess.Popen([str(PY), str(script)], cwd=script.parent, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(4 if healthy else 25)
    p.send_signal(signal.SIGINT)
    try:
        out, _ = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        out, _ = p.communicate()
    return out


if __name__ == "__main__":
    ID = "training-hang"
    if sys.argv[1:] == ["positive-3"]:
        write_log(ID, "positive-3.log", ctrl_c_run())
        write_log(ID, "todo-1.log", ctrl_c_run(healthy=True))
        sys.exit()
    write_log(ID, "positive-1.log", torchrun_console(WORKER, ["--nproc-per-node", "4", "--tee", "3"]))
    write_log(ID, "positive-2.log", labeled(WORKER, 4, "[1,{rank}]<{stream}>:", env={"EXAMPLE_MODE": "dataloader"},
                                       epilogue=MPIRUN_EPILOGUE))
    write_log(ID, "negative-1.log", torchrun_console(WORKER, ["--nproc-per-node", "4", "--tee", "3"], env={"EXAMPLE_MODE": "pause"}))
    write_log(ID, "positive-3.log", ctrl_c_run())
    write_log(ID, "todo-1.log", ctrl_c_run(healthy=True))
