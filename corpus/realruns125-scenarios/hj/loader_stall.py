"""Image-classification style training with a multi-worker DataLoader (fork start method).

--telemetry-rank R : rank R starts a background "telemetry" thread that snapshots the shared sample-cache
                     stats under the cache lock every half second (the Dataset's __getitem__ takes the same
                     lock; DataLoader workers are forked while the thread may hold it)
--loader-timeout S : DataLoader(timeout=S)
--progress         : tqdm bar
Works under torchrun (gloo DDP) or as a plain single process.
"""
import argparse
import datetime
import faulthandler
import os
import threading
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--telemetry-rank", type=int, default=-1)
p.add_argument("--telemetry-start-epoch", type=int, default=0)
p.add_argument("--loader-timeout", type=float, default=0)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--dataset-size", type=int, default=1536)
p.add_argument("--progress", action="store_true")
p.add_argument("--stack-dump-after", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=60)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
port = os.environ.get("MASTER_PORT", "single")
if args.stack_dump_after:
    faulthandler.dump_traceback_later(args.stack_dump_after, repeat=False)

CACHE_LOCK = threading.Lock()
CACHE_STATS = {"hits": 0, "misses": 0}


class SyntheticImages(Dataset):
    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        with CACHE_LOCK:
            CACHE_STATS["misses"] += 1
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 32, 32, generator=g)
        time.sleep(0.002)
        return img, i % 10


def worker_init(wid):
    with open(f"/work/rr125/hj/runs/pid.{port}.rank{rank}.worker{wid}", "w") as f:
        f.write(str(os.getpid()))


def telemetry():
    while True:
        with CACHE_LOCK:
            snapshot = dict(CACHE_STATS)
            time.sleep(0.5)  # serialize + push snapshot
        time.sleep(0.01)


distributed = world > 1
if distributed:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
torch.manual_seed(0)
torch.set_num_threads(1)


def start_telemetry():
    threading.Thread(target=telemetry, daemon=True, name="telemetry").start()
    print(f"[rank{rank}] telemetry thread started", flush=True)


if rank == args.telemetry_rank and args.telemetry_start_epoch == 0:
    start_telemetry()

ds = SyntheticImages(args.dataset_size)
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True) if distributed else None
dl = DataLoader(ds, batch_size=32, sampler=sampler, shuffle=sampler is None, num_workers=args.workers,
                worker_init_fn=worker_init, timeout=args.loader_timeout, multiprocessing_context="fork",
                persistent_workers=False)
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(),
                      nn.Linear(256, 10))
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
for epoch in range(args.epochs):
    if sampler is not None:
        sampler.set_epoch(epoch)
    if rank == args.telemetry_rank and 0 < args.telemetry_start_epoch == epoch:
        start_telemetry()
    it = dl
    if args.progress and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, desc=f"epoch {epoch}", ncols=100, mininterval=0.5)
    correct = tot = 0
    for x, y in it:
        out = model(x)
        loss = nn.functional.cross_entropy(out, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        correct += (out.argmax(1) == y).sum().item()
        tot += len(y)
        time.sleep(0.05)
    print(f"[rank{rank}] epoch {epoch} loss {loss.item():.4f} train_acc {correct / tot:.3f}", flush=True)
if distributed:
    dist.barrier()
    dist.destroy_process_group()
print(f"[rank{rank}] done", flush=True)
