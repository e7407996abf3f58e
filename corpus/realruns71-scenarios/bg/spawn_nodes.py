"""Multi-node training without torchrun: each node runs this script with --node-rank and
torch.multiprocessing.spawn starts its local workers (global rank = node_rank * nproc + local)."""
import argparse, json, os, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler


class JsonlDataset(Dataset):
    """One JSON record per line: {"x": [...8 floats...], "y": int}."""
    def __init__(self, path):
        with open(path) as f:
            self.lines = f.readlines()

    def __len__(self):
        return len(self.lines)

    def __getitem__(self, i):
        rec = json.loads(self.lines[i])
        return torch.tensor(rec["x"], dtype=torch.float32), rec["y"]


def make_jsonl(path, n, truncate_at=None):
    g = torch.Generator().manual_seed(7)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for i in range(n):
            line = json.dumps({"x": torch.randn(8, generator=g).tolist(), "y": int(torch.randint(0, 3, (1,), generator=g))})
            if truncate_at is not None and i == truncate_at:
                line = line[: len(line) // 2]  # partially written record (copy interrupted)
            f.write(line + "\n")


def worker(local_rank, args):
    rank = args.node_rank * args.nproc + local_rank
    world = args.nnodes * args.nproc
    os.environ.setdefault("MASTER_ADDR", args.master_addr)
    os.environ.setdefault("MASTER_PORT", str(args.master_port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    print(f"[node{args.node_rank} rank{rank}] joined group of {world}", flush=True)
    path = os.path.join(args.data_root, f"node{args.node_rank}", "train.jsonl")
    bad = args.fault == "truncated-record" and args.node_rank == args.fault_node
    make_jsonl(path, 640, truncate_at=(301 if bad else None))
    ds = JsonlDataset(path)
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False)
    dl = DataLoader(ds, batch_size=16, sampler=sampler, num_workers=1)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)
        for step, (x, y) in enumerate(dl):
            loss = F.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5 == 0:
                print(f"[node{args.node_rank} rank{rank}] epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
            time.sleep(0.02)
    dist.barrier()
    print(f"[node{args.node_rank} rank{rank}] finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nnodes", type=int, default=2)
    p.add_argument("--node-rank", type=int, required=True)
    p.add_argument("--nproc", type=int, default=1)
    p.add_argument("--master-addr", default="localhost")
    p.add_argument("--master-port", type=int, default=31875)
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--fault", default="none")
    p.add_argument("--fault-node", type=int, default=1)
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--data-root", default="/work/rr71/bg/tmp/jsonl")
    args = p.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.nproc, join=True)
