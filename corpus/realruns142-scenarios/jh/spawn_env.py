"""torch.multiprocessing.spawn trainer that takes its rendezvous from the environment (MASTER_ADDR/MASTER_PORT).
--fault none|cuda-visible (CUDA_VISIBLE_DEVICES decides the device)"""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def worker(rank, world, args):
    print(f"[rank{rank}] connecting to {os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}", flush=True)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    if os.environ.get("CUDA_VISIBLE_DEVICES"):
        device = torch.device(f"cuda:{rank}")
    else:
        device = torch.device("cpu")
    print(f"[rank{rank}] using device {device}", flush=True)
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 4)).to(device)
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.05)
    for step in range(1, args.steps + 1):
        x = torch.randn(64, 32, device=device); y = torch.randint(0, 4, (64,), device=device)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"step {step}/{args.steps} loss={loss.item():.4f}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--pg-timeout", type=int, default=30)
    args = p.parse_args()
    os.environ.setdefault("MASTER_ADDR", "localhost")
    os.environ.setdefault("MASTER_PORT", "46928")
    mp.spawn(worker, args=(args.world, args), nprocs=args.world, join=True)
