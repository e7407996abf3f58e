"""torch.multiprocessing.spawn launcher with a small sequence model.

--fault: none | partial_batch_view (rank with a shard whose length is not a multiple of the batch size)
"""
import argparse
import os
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--port", type=int, default=31680)
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()

BS, T, D = 8, 12, 16


class SeqModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.rnn = nn.GRU(D, 32, batch_first=True)
        self.head = nn.Linear(32, 4)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out)


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(rank)
    n = 96
    if args.fault == "partial_batch_view" and rank == args.fault_rank:
        n = 100  # this rank's shard got the 4 leftover samples
    x = torch.randn(n, T, D)
    y = torch.randint(0, 4, (n, T))
    torch.manual_seed(0)
    model = DDP(SeqModel())
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    if args.fault == "none" and rank == 0:
        warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated "
                      "where possible. Please use `scheduler.step()` to step the scheduler.", UserWarning)
    for ep in range(args.epochs):
        tot = 0.0
        nb = 0
        for i in range(0, n, BS):
            xb, yb = x[i:i + BS], y[i:i + BS]
            logits = model(xb)
            # flatten (batch, time, classes) -> (batch*time, classes)
            loss = F.cross_entropy(logits.view(BS * T, logits.size(-1)), yb.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
            nb += 1
        t = torch.tensor([tot / nb])
        dist.all_reduce(t)
        if rank == 0:
            print(f"epoch {ep} mean loss {t.item() / world:.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        print("training complete", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(args.nprocs,), nprocs=args.nprocs, join=True)
