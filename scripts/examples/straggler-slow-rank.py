#!/usr/bin/env python
"""Regenerate the examples of `straggler-slow-rank` with real `torchrun --nproc-per-node 4` gloo jobs on CPU.

Every rank logs `step N loss X step_time Y` (its own compute/data time before the gradient
all_reduce) and the time it then waited in the collective. One rank is slowed every step
(time.sleep standing in for a throttled GPU, a slow disk or a noisy neighbour): its
step_time is consistently ~3x the others', and the *other* ranks' allreduce wait grows by
the same amount because they wait for it. The runs finish; nothing errors.

positive-1: torchrun --tee 3, rank 3 slow (extra 120 ms a step).
positive-2: srun --label (4 tasks, 2 per node), rank 2 slow on node-1 (extra 300 ms a step), key=value
            logs in seconds.
negative-1: the same job with no straggler (all ranks within noise of each other).

    .venv/bin/python scripts/examples/straggler-slow-rank.py
"""

import sys

from _runner import labeled, torchrun_console, write_log

WORKER = r'''
import datetime, logging, os, random, sys, time
import torch, torch.distributed as dist, torch.nn as nn

SLOW = int(os.environ.get("SLOW_RANK", "-1"))
STYLE = os.environ.get("LOG_STYLE", "plain")
rank_env = os.environ["RANK"]
logging.basicConfig(format=f"%(asctime)s [rank{rank_env}] %(levelname)s %(name)s: %(message)s",
                    level=logging.INFO, stream=sys.stdout)
log = logging.getLogger("train")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=60))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
random.seed(rank)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 10))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
if rank == 0:
    log.info("world_size=%d steps=40 micro_batch=32", world)
start = time.time()
for step in range(1, 41):
    t0 = time.time()
    time.sleep(0.05 + random.uniform(0, 0.01))  # data loading
    if rank == SLOW:
        time.sleep(float(os.environ.get("SLOW_EXTRA", "0.12")))  # the straggler: throttled device / slow storage
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    compute = time.time() - t0
    t1 = time.time()
    for p in model.parameters():
        dist.all_reduce(p.grad)
        p.grad /= world
    wait = time.time() - t1
    opt.step(); opt.zero_grad()
    if STYLE == "plain":
        log.info("step %d loss %.4f step_time %.1f ms allreduce_wait %.1f ms", step, loss.item(), compute * 1e3, wait * 1e3)
    else:  # key=value style, seconds
        log.info("step=%d loss=%.4f step_time=%.3fs allreduce_wait=%.3fs lr=%.2e", step, loss.item(), compute, wait,
                 0.05 * (1 - step / 40))
if rank == 0:
    log.info("train_runtime %.1f s, %.2f steps/s", time.time() - start, 40 / (time.time() - start))
dist.destroy_process_group()
'''


if __name__ == "__main__":
    ID = "straggler-slow-rank"
    if sys.argv[1:] == ["positive-2"]:
        write_log(ID, "positive-2.log", labeled(WORKER, 4, "{rank}: ", env={"SLOW_RANK": "2", "SLOW_EXTRA": "0.3", "LOG_STYLE": "kv"}))
        sys.exit()
    write_log(ID, "positive-1.log", torchrun_console(WORKER, ["--nproc-per-node", "4", "--tee", "3"], env={"SLOW_RANK": "3"}))
    write_log(ID, "positive-2.log", labeled(WORKER, 4, "{rank}: ", env={"SLOW_RANK": "2", "SLOW_EXTRA": "0.3", "LOG_STYLE": "kv"}))
    write_log(ID, "negative-1.log", torchrun_console(WORKER, ["--nproc-per-node", "4", "--tee", "3"]))
