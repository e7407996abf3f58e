"""DataLoader / threading stalls: a worker forked while a cache lock was held, a user's own
prefetch-thread deadlock, and a healthy run with noisy warnings.

--mode lock-timeout | lock-hang | thread-deadlock | healthy
"""
import argparse
import faulthandler
import logging
import os
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--mode", default="healthy")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--dl-timeout", type=float, default=0)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--dump-after", type=int, default=0)
p.add_argument("--dump-exit", type=int, default=0)
p.add_argument("--dist", type=int, default=0)
p.add_argument("--frank", type=int, default=1)
p.add_argument("--bar", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=30)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s", stream=sys.stdout)
log = logging.getLogger("trainer")

RANK = 0


class TokenCache:
    """Process-wide cache of tokenized samples, refreshed by a background thread."""

    def __init__(self):
        self.lock = threading.Lock()
        self.data = {}

    def refresh(self, slow):
        with self.lock:
            # re-reads the vocab file; slow on the shared mount
            time.sleep(slow)
            self.data.clear()

    def get(self, i):
        with self.lock:
            if i not in self.data:
                g = torch.Generator().manual_seed(i)
                self.data[i] = torch.randn(32, generator=g)
            return self.data[i]


CACHE = TokenCache()


class DS(Dataset):
    def __len__(self):
        return 256

    def __getitem__(self, i):
        x = CACHE.get(i)
        return x, i % 4


def refresher(slow, stop):
    while not stop.is_set():
        CACHE.refresh(slow)
        time.sleep(0.05)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(32, 64)
        self.l2 = nn.Linear(64, 4)

    def forward(self, x):
        return self.l2(F.relu(self.l1(x)))


def worker_init(wid):
    if args.dump_after:
        faulthandler.dump_traceback_later(args.dump_after, exit=False)


def train():
    global RANK
    model = Net()
    if args.dist:
        import torch.distributed as dist
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
        RANK = dist.get_rank()
        model = nn.parallel.DistributedDataParallel(model)
        log.info("rank %d/%d initialised (gloo)", RANK, dist.get_world_size())
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5)
    stop = threading.Event()
    if args.mode.startswith("lock") and (not args.dist or RANK == args.frank):
        # only this rank enables the hot-reload of the vocab (config flag read from its local env file)
        th = threading.Thread(target=refresher, args=(1.0, stop), daemon=True, name="vocab-refresh")
        th.start()
        log.info("vocab hot-reload thread started")
    if args.mode == "healthy":
        sched.step()  # called before the first optimizer.step(): emits a UserWarning
    dl = DataLoader(DS(), batch_size=32, shuffle=True, num_workers=args.workers,
                    timeout=args.dl_timeout, worker_init_fn=worker_init)
    step = 0
    for ep in range(args.epochs):
        it = dl
        if args.bar and RANK == 0:
            from tqdm import tqdm
            it = tqdm(dl, desc=f"epoch {ep}", file=sys.stderr)
        tot = 0.0
        for x, y in it:
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            step += 1
            time.sleep(0.05)
        sched.step()
        log.info("rank %d epoch %d done: mean loss %.4f, lr %.4f", RANK, ep, tot / len(dl), sched.get_last_lr()[0])
    stop.set()
    log.info("rank %d training complete (%d steps)", RANK, step)
    if args.dist:
        import torch.distributed as dist
        dist.destroy_process_group()


# ---------------------------------------------------------------- user threading deadlock
class Prefetcher:
    def __init__(self):
        self.stats_lock = threading.Lock()
        self.queue_lock = threading.Lock()
        self.queue = []
        self.stats = {"produced": 0, "consumed": 0}

    def produce(self, n):
        for i in range(n):
            x = torch.randn(32, 32)
            with self.queue_lock:
                self.queue.append(x)
            self.stats["produced"] += 1
            if i % 200 == 199:
                # periodic stats flush: records the queue depth
                with self.stats_lock:
                    self.stats["flushes"] = self.stats.get("flushes", 0) + 1
                    time.sleep(0.005)
                    with self.queue_lock:
                        self.stats["depth"] = len(self.queue)
            time.sleep(0.004)

    def consume(self):
        while True:
            with self.queue_lock:
                if self.queue:
                    x = self.queue.pop(0)
                    with self.stats_lock:
                        self.stats["consumed"] += 1
                    return x
            time.sleep(0.001)


def thread_deadlock():
    if args.dump_after:
        faulthandler.dump_traceback_later(args.dump_after, exit=bool(args.dump_exit))
    pf = Prefetcher()
    th = threading.Thread(target=pf.produce, args=(10000,), name="prefetch", daemon=True)
    th.start()
    model = nn.Linear(32, 4)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    log.info("prefetch thread started, training")
    for step in range(2000):
        x = pf.consume()
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 20 == 0:
            log.info("step %d loss %.4f produced=%d consumed=%d", step, loss.item(),
                     pf.stats["produced"], pf.stats["consumed"])
    log.info("done")


if __name__ == "__main__":
    if args.mode == "thread-deadlock":
        thread_deadlock()
    else:
        train()
