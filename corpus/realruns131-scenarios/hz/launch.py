"""Tiny DDP regression job used to reproduce launch-time mistakes.

--fault selects a misconfiguration:
  none        healthy run (prints some scary-looking but harmless warnings)
  backend     uses the backend named by --backend (e.g. nccl copied from a GPU cluster script)
  twice       a helper calls init_process_group again (setup_distributed() called from two places)
  shards      data are pre-sharded into --num-shards files, one per rank (wrong --nproc-per-node)
"""
import argparse
import datetime
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--backend", default="gloo")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--num-shards", type=int, default=2)
    p.add_argument("--data-dir", default="data/shards")
    p.add_argument("--pg-timeout", type=int, default=30)
    return p.parse_args()


def setup_distributed(args):
    dist.init_process_group(backend=args.backend,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    return dist.get_rank(), dist.get_world_size()


def make_shards(args):
    os.makedirs(args.data_dir, exist_ok=True)
    for i in range(args.num_shards):
        path = os.path.join(args.data_dir, f"shard-{i:05d}.pt")
        if not os.path.exists(path):
            g = torch.Generator().manual_seed(i)
            x = torch.randn(64, 16, generator=g)
            torch.save({"x": x, "y": x.sum(1, keepdim=True)}, path)


def load_rank_shard(args, rank):
    # each rank reads every file whose index % world == rank
    world = dist.get_world_size()
    files = sorted(f for f in os.listdir(args.data_dir) if f.endswith(".pt"))
    mine = files[rank::world][: max(1, len(files) // world)] if rank < len(files) else []
    xs, ys = [], []
    for f in mine:
        d = torch.load(os.path.join(args.data_dir, f))
        xs.append(d["x"]); ys.append(d["y"])
    if xs:
        return TensorDataset(torch.cat(xs), torch.cat(ys))
    return TensorDataset(torch.empty(0, 16), torch.empty(0, 1))


def main():
    args = parse()
    rank, world = setup_distributed(args)
    print(f"[rank {rank}] initialised process group backend={dist.get_backend()} world_size={world}", flush=True)
    torch.manual_seed(0)
    if args.fault == "none":
        nbytes = torch.zeros(4).storage().nbytes()
        if rank == 0:
            print("WARNING: NCCL not available on this host, falling back to gloo (this is slow for large models)", file=sys.stderr, flush=True)
    if args.fault == "twice":
        # a refactor left a second call in the model-building helper
        pass

    if args.fault == "shards":
        if rank == 0:
            make_shards(args)
        dist.barrier()
        ds = load_rank_shard(args, rank)
        print(f"[rank {rank}] loaded {len(ds)} samples from {args.data_dir}", flush=True)
        loader = DataLoader(ds, batch_size=8, shuffle=True)
    else:
        x = torch.randn(512, 16)
        ds = TensorDataset(x, x.sum(1, keepdim=True))
        sampler = DistributedSampler(ds, num_replicas=world, rank=rank)
        loader = DataLoader(ds, batch_size=16, sampler=sampler)

    def build_model():
        if args.fault == "twice":
            setup_distributed(args)
        m = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
        return DDP(m)

    model = build_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5)
    if args.fault == "none" and os.environ.get("WARMUP_SCHED_STEP", "1") == "1":
        sched.step()
    step = 0
    t0 = time.time()
    for epoch in range(100):
        for xb, yb in loader:
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            step += 1
            if step % 5 == 0 and rank == 0:
                print(f"epoch {epoch} step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.4g} "
                      f"({(time.time()-t0)/step*1000:.1f} ms/step)", flush=True)
            if step >= args.steps:
                break
        if step >= args.steps:
            break
    dist.barrier()
    if rank == 0:
        print("training finished", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
