"""DDP trainer with a token-classification style DataLoader.

--collate closure : collate_fn built as a closure over the tokenizer padding id (unpicklable for spawn)
--collate module  : module-level collate function (picklable)
--mp-context      : DataLoader worker start method
"""
import argparse
import datetime
import os
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class Toks(Dataset):
    def __init__(self, n=400, vocab=100):
        g = torch.Generator().manual_seed(7)
        self.items = [torch.randint(1, vocab, (int(torch.randint(4, 12, (1,), generator=g)),), generator=g)
                      for _ in range(n)]

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def pad_collate(batch, pad_id=0):
    L = max(len(b) for b in batch)
    out = torch.full((len(batch), L), pad_id, dtype=torch.long)
    for i, b in enumerate(batch):
        out[i, : len(b)] = b
    return out


def list_collate(batch):
    # keep ragged sequences as a list (padding is done later, per micro-batch)
    return list(batch)


def make_collate(kind, pad_id):
    if kind == "list":
        return list_collate
    if kind == "closure":
        def collate(batch):
            return pad_collate(batch, pad_id)
        return collate
    return pad_collate


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--collate", default="module", choices=["module", "closure", "list"])
    p.add_argument("--mp-context", default=None)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=16)
    a = p.parse_args()
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
    ds = Toks()
    dl = DataLoader(ds, batch_size=a.batch_size, sampler=DistributedSampler(ds), num_workers=a.workers,
                    collate_fn=make_collate(a.collate, 0), multiprocessing_context=a.mp_context)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Embedding(100, 32), nn.Linear(32, 100)))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for ep in range(a.epochs):
        dl.sampler.set_epoch(ep)
        for i, x in enumerate(dl):
            if isinstance(x, list):
                x = pad_collate(x)
            logits = model(x[:, :-1])
            loss = nn.functional.cross_entropy(logits.flatten(0, 1), x[:, 1:].flatten(), ignore_index=0)
            opt.zero_grad(); loss.backward(); opt.step()
            if rank == 0 and i % 5 == 0:
                print(f"epoch {ep} it {i} loss {loss.item():.4f}", flush=True)
    dist.barrier()
    if rank == 0:
        print("training complete", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
