"""DDP training over a small on-disk dataset (one .npy file per sample) with DataLoader workers and tqdm.

--fault: none | ragged (one shard has shorter sequences) | badfile (a sample file is corrupt, read in a worker)
         | fds (each sample keeps its file open; run under a low `ulimit -n`) | empty (glob pattern matches nothing)
"""
import argparse
import glob
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler
from tqdm import tqdm

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--data", default="/work/rr67/ax/tmp/data")
p.add_argument("--pattern", default="*.npy")
p.add_argument("--workers", type=int, default=1)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--pid-dir", default=None, help="write DataLoader worker pids here (for monitoring)")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))


def build_data(root, n=96, seq=16):
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(n):
        np.save(os.path.join(root, f"sample_{i:04d}.npy"), rng.standard_normal((seq, 8)).astype(np.float32))


class NpyDataset(Dataset):
    def __init__(self, root, pattern):
        self.files = sorted(glob.glob(os.path.join(root, pattern)))
        self.handles = []

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if args.fault == "fds":
            f = open(self.files[i], "rb")  # memory-mapped view keeps the file alive
            self.handles.append(f)
            x = np.load(f)
        else:
            x = np.load(self.files[i])
        x = torch.from_numpy(x)
        return x, x.sum().sign().long().clamp(min=0)


def _worker_init(wid):
    if args.pid_dir:
        os.makedirs(args.pid_dir, exist_ok=True)
        with open(os.path.join(args.pid_dir, f"rank{rank}_worker{wid}.pid"), "w") as f:
            f.write(str(os.getpid()))


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    root = args.data + f"_{args.fault}"
    if rank == 0 and not os.path.exists(root):
        build_data(root)
        if args.fault == "ragged":
            rng = np.random.default_rng(1)
            for i in range(61, 67, 2):  # files appended later from a different preprocessing run (max_len=12)
                np.save(os.path.join(root, f"sample_{i:04d}.npy"), rng.standard_normal((12, 8)).astype(np.float32))
        if args.fault == "badfile":
            with open(os.path.join(root, "sample_0041.npy"), "r+b") as f:
                f.seek(0)
                f.write(b"\x00" * 64)  # header clobbered by an interrupted rsync
    dist.barrier()
    ds = NpyDataset(root, args.pattern)
    if rank == 0:
        print(f"[data] {len(ds)} samples found in {root}", flush=True)
    sampler = DistributedSampler(ds, shuffle=False)
    dl = DataLoader(ds, batch_size=8, sampler=sampler, num_workers=args.workers,
                    persistent_workers=args.workers > 0,
                    worker_init_fn=_worker_init)
    model = DDP(nn.Sequential(nn.Flatten(), nn.Linear(16 * 8, 32), nn.ReLU(), nn.Linear(32, 2)), find_unused_parameters=args.find_unused)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for ep in range(args.epochs):
        sampler.set_epoch(ep)
        bar = tqdm(dl, desc=f"rank{rank} epoch {ep}", disable=False, file=sys.stderr)
        for x, y in bar:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            bar.set_postfix(loss=f"{loss.item():.3f}")
            time.sleep(0.05)
    dist.barrier()
    if rank == 0:
        print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
