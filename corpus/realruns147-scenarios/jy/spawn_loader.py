"""torch.multiprocessing.spawn trainer with a file-backed Dataset and DataLoader.

--fault none | workerkey | lambda_tf | rank_oserr
--nprocs N (spawn ranks), --workers W per rank, --mp-ctx fork|spawn
"""
import argparse
import datetime
import json
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, DistributedSampler


class JsonlDataset(Dataset):
    def __init__(self, path, transform=None):
        with open(path) as f:
            self.rows = [json.loads(l) for l in f]
        self.transform = transform

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        r = self.rows[i]
        x = torch.tensor(r["features"], dtype=torch.float32)
        if self.transform is not None:
            x = self.transform(x)
        return x, torch.tensor(r["label"])


def make_data(path, n, bad_at=None):
    with open(path, "w") as f:
        for i in range(n):
            g = torch.Generator().manual_seed(i)
            row = {"features": torch.randn(12, generator=g).tolist(), "label": i % 3}
            if bad_at is not None and i == bad_at:
                row = {"features": row["features"], "lable": 1}  # typo in one exporter version
            f.write(json.dumps(row) + "\n")


def run(rank, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    torch.set_num_threads(1)
    if args.nprocs > 1:
        dist.init_process_group("gloo", rank=rank, world_size=args.nprocs,
                                timeout=datetime.timedelta(seconds=args.pg_timeout))
    print(f"[rank {rank}] up, pid={os.getpid()}", flush=True)
    tf = None
    if args.fault == "lambda_tf":
        tf = lambda x: (x - x.mean()) / (x.std() + 1e-6)  # noqa: E731
    path = os.path.join(args.data_dir, f"part-{rank}.jsonl")
    ds = JsonlDataset(path, transform=tf)
    sampler = None
    dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=args.workers,
                    multiprocessing_context=(args.mp_ctx if args.workers > 0 else None))
    model = nn.Sequential(nn.Linear(12, 32), nn.Tanh(), nn.Linear(32, 3))
    if args.nprocs > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    it = range(args.epochs)
    if args.tqdm and rank == 0:
        from tqdm import tqdm
    for ep in range(args.epochs):
        batches = dl
        if args.tqdm and rank == 0:
            batches = tqdm(dl, desc=f"epoch {ep}", ncols=90)
        tot = 0.0
        for i, (x, y) in enumerate(batches):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item()
            time.sleep(args.sleep)
        print(f"[rank {rank}] epoch {ep} mean_loss={tot / (i + 1):.4f}", flush=True)
    if args.nprocs > 1:
        dist.barrier()
        dist.destroy_process_group()
    print(f"[rank {rank}] finished", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-rank", type=int, default=1)
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--mp-ctx", default="fork")
    p.add_argument("--port", type=int, default=47881)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--rows", type=int, default=96)
    p.add_argument("--sleep", type=float, default=0.0)
    p.add_argument("--data-dir", default="runs/jsonl")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--tqdm", action="store_true")
    args = p.parse_args()
    os.makedirs(args.data_dir, exist_ok=True)
    for r in range(args.nprocs):
        bad = 37 if (args.fault == "workerkey" and r == args.fault_rank) else None
        make_data(os.path.join(args.data_dir, f"part-{r}.jsonl"), args.rows, bad)
    if args.nprocs == 1:
        run(0, args)
    else:
        mp.spawn(run, args=(args,), nprocs=args.nprocs, join=True)
