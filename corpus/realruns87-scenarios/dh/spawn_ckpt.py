"""DDP trainer launched with torch.multiprocessing.spawn; saves / resumes checkpoints.

--resume PATH : every rank loads PATH before wrapping in DDP (torch.load default settings)
--save PATH   : rank 0 saves {model, optimizer, args, step} at the end
"""
import argparse, os, sys, time, warnings
from datetime import timedelta
import torch
import torch.nn as nn
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(12, 24), nn.GELU(), nn.Linear(24, 3))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    start = 0
    if args.resume:
        if rank == 0:
            print(f"=> loading checkpoint '{args.resume}'", flush=True)
        ck = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optimizer"])
        start = ck["step"]
        if rank == 0:
            print(f"=> resumed at step {start}", flush=True)
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    g = torch.Generator().manual_seed(rank)
    for step in range(start, start + args.steps):
        x = torch.randn(16, 12, generator=g)
        y = torch.randint(0, 3, (16,), generator=g)
        loss = nn.functional.cross_entropy(ddp(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0 and step % 2 == 0:
            print(f"Epoch[0] Iter[{step}] loss={loss.item():.4f}", flush=True)
    if args.save and rank == 0:
        os.makedirs(os.path.dirname(args.save), exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(),
                    "step": start + args.steps, "args": args}, args.save)
        print(f"saved checkpoint to {args.save}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=37920)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--resume", default=None)
    p.add_argument("--save", default=None)
    p.add_argument("--find-unused", action="store_true")
    args = p.parse_args()
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)
    print("all workers finished", flush=True)
