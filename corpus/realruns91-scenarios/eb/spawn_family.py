"""DDP via torch.multiprocessing.spawn (no launcher). Env-style configuration read from flags.

--rank0-delay S : rank 0 spends S seconds "indexing the dataset" before init_process_group
--master-addr   : MASTER_ADDR given to all ranks
"""
import argparse
import datetime
import logging
import os
import time
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def worker(rank, a):
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank{rank}] %(message)s")
    log = logging.getLogger("spawn")
    os.environ["MASTER_ADDR"] = a.master_addr
    os.environ["MASTER_PORT"] = str(a.port)
    if rank == 0 and a.rank0_delay:
        log.info("indexing dataset shards ...")
        time.sleep(a.rank0_delay)
    log.info("init_process_group(gloo) world_size=%d master=%s:%s", a.world, a.master_addr, a.port)
    dist.init_process_group("gloo", rank=rank, world_size=a.world, timeout=datetime.timedelta(seconds=a.timeout))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1024, 20, generator=g)
    y = (x[:, 0] * x[:, 1] > 0).long()
    ds = TensorDataset(x, y)
    dl = DataLoader(ds, batch_size=32, sampler=DistributedSampler(ds), num_workers=a.workers)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    for ep in range(a.epochs):
        dl.sampler.set_epoch(ep)
        tot, n = 0.0, 0
        for xb, yb in dl:
            loss = nn.functional.cross_entropy(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item(); n += 1
        t = torch.tensor([tot / n])
        dist.all_reduce(t)
        if rank == 0:
            log.info("epoch %d mean loss %.4f", ep, t.item() / a.world)
    dist.destroy_process_group()
    log.info("finished")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--master-addr", default="127.0.0.1")
    p.add_argument("--port", type=int, default=39740)
    p.add_argument("--rank0-delay", type=float, default=0)
    p.add_argument("--timeout", type=int, default=30)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    mp.spawn(worker, args=(a,), nprocs=a.world, join=True)


if __name__ == "__main__":
    main()
