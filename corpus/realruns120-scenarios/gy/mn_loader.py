"""Tiny DDP classifier fed by a DataLoader over per-sample .npy files on node-local disk.

Each node reads <data-root>/<node-name>/sample_XXXXX.npy. Faults come from the environment the
script is run in (node-local data, ulimits, external signals); --keep-open mimics a dataset that
caches open file handles (memory-mapped samples).
"""
import argparse
import glob
import os
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--make-data", default="")
p.add_argument("--n", type=int, default=400)
p.add_argument("--data-root", default="data/samples")
p.add_argument("--node-name", default="node01")
p.add_argument("--workers", type=int, default=1)
p.add_argument("--keep-open", action="store_true")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--pid-dir", default="")
p.add_argument("--loader-timeout", type=int, default=0)
p.add_argument("--spawn-node-rank", type=int, default=-1, help="launch with torch.multiprocessing.spawn as this node")
p.add_argument("--spawn-nnodes", type=int, default=2)
p.add_argument("--spawn-nproc", type=int, default=1)
args = p.parse_args()

if args.make_data:
    os.makedirs(args.make_data, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(args.n):
        x = rng.standard_normal(32).astype(np.float32)
        np.save(os.path.join(args.make_data, f"sample_{i:05d}.npy"), np.concatenate([x, np.array([x[:3].sum() > 0], dtype=np.float32)]))
    print("wrote", args.n, "samples to", args.make_data)
    sys.exit(0)


class NpyDir(Dataset):
    def __init__(self, root, keep_open):
        self.files = sorted(glob.glob(os.path.join(root, "sample_*.npy")))
        self.keep_open = keep_open
        self._cache = {}

    def __len__(self):
        return len(self.files)

    def __getitem__(self, i):
        if self.keep_open:
            if i not in self._cache:
                self._cache[i] = np.load(self.files[i], mmap_mode="r")
            a = np.array(self._cache[i])
        else:
            a = np.load(self.files[i])
        return torch.from_numpy(a[:-1].copy()), torch.tensor(a[-1]).long()


def main(local_rank=0):
    if args.spawn_node_rank >= 0:
        os.environ['RANK'] = str(args.spawn_node_rank * args.spawn_nproc + local_rank)
        os.environ['WORLD_SIZE'] = str(args.spawn_nnodes * args.spawn_nproc)
        os.environ['LOCAL_RANK'] = str(local_rank)
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    print(f"[{args.node_name} rank {rank}/{world}] data root {args.data_root}/{args.node_name}", flush=True)
    ds = NpyDir(os.path.join(args.data_root, args.node_name), args.keep_open)
    print(f"[{args.node_name} rank {rank}] {len(ds)} samples, {args.workers} loader workers", flush=True)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0)
    dl = DataLoader(ds, batch_size=args.bs, sampler=sampler, num_workers=args.workers,
                    persistent_workers=args.workers > 0, timeout=args.loader_timeout)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for ep in range(args.epochs):
        sampler.set_epoch(ep)
        tot, nb = 0.0, 0
        for bi, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item(); nb += 1
            if args.pid_dir and bi == 3 and ep == 0:
                os.makedirs(args.pid_dir, exist_ok=True)
                with open(os.path.join(args.pid_dir, f"rank{rank}.workers"), "w") as f:
                    f.write(" ".join(str(w.pid) for w in dl._iterator._workers))
            time.sleep(0.1)
            if bi % 5 == 0 and rank == 0:
                print(f"epoch {ep} batch {bi} loss {loss.item():.4f}", flush=True)
        print(f"[{args.node_name} rank {rank}] epoch {ep} mean loss {tot/max(nb,1):.4f}", flush=True)
    dist.barrier()
    print(f"[{args.node_name} rank {rank}] finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    if args.spawn_node_rank >= 0:
        import torch.multiprocessing as mp
        print(f"node rank {args.spawn_node_rank}: spawning {args.spawn_nproc} processes "
              f"(master {os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')})", flush=True)
        mp.spawn(main, nprocs=args.spawn_nproc, join=True)
    else:
        main()
