"""torch.multiprocessing.spawn launcher for a tiny transformer classifier (gloo, CPU)."""
import argparse, datetime, os, sys, time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--steps", type=int, default=30)
    p.add_argument("--world-size", type=int, default=None, help="defaults to WORLD_SIZE env or nprocs")
    p.add_argument("--rank-offset", type=int, default=None, help="node_rank * nprocs; default from NODE_RANK env")
    p.add_argument("--pg-timeout", type=float, default=30)
    p.add_argument("--fault", default="none")
    return p.parse_args()


class TinyCls(nn.Module):
    def __init__(self, vocab=500, d=64, n_cls=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, nhead=4, dim_feedforward=128, batch_first=True)
        self.enc = nn.TransformerEncoder(layer, num_layers=2)
        self.out = nn.Linear(d, n_cls)

    def forward(self, ids):
        return self.out(self.enc(self.emb(ids)).mean(1))


def worker(local_rank, args):
    world = args.world_size or int(os.environ.get("WORLD_SIZE", args.nprocs))
    offset = args.rank_offset if args.rank_offset is not None else int(os.environ.get("NODE_RANK", 0)) * args.nprocs
    rank = offset + local_rank
    print(f"[worker {local_rank}] rank={rank} world_size={world} master={os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}", flush=True)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    torch.manual_seed(rank)
    model = DDP(TinyCls())
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    t0 = time.time()
    for step in range(args.steps):
        ids = torch.randint(0, 500, (8, 24))
        y = (ids[:, 0] % 4)
        loss = nn.functional.cross_entropy(model(ids), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if rank == 0 and step % 5 == 0:
            print(f"step {step:3d} | loss {loss.item():.4f} | {time.time()-t0:.1f}s", flush=True)
        time.sleep(0.1)
    if rank == 0:
        print("finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    args = parse()
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "41920")
    print(f"spawning {args.nprocs} workers", flush=True)
    mp.spawn(worker, args=(args,), nprocs=args.nprocs, join=True)
