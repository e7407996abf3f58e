"""DDP via torch.multiprocessing.spawn with periodic checkpoints named after the run config."""
import argparse, json, os, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP


def worker(rank, world, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", str(args.port))
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(32, 64), nn.Tanh(), nn.Linear(64, 8)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    cfg = {"model": "mlp-32-64-8", "opt": "sgd", "lr": 0.05, "momentum": 0.9, "world": world,
           "data": args.data_tag, "seed": 0, "aug": ["jitter", "mixup", "cutout"], "note": args.note}
    if args.name_style == "config":
        # put the full config in the filename so runs are self-describing
        tag = "_".join(f"{k}={v}" for k, v in cfg.items()).replace(" ", "").replace("/", "-")
    else:
        tag = "run"
    g = torch.Generator().manual_seed(rank)
    for step in range(1, args.steps + 1):
        x = torch.randn(32, 32, generator=g)
        y = torch.randint(0, 8, (32,), generator=g)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[rank {rank}] step {step:4d} loss {loss.item():.4f}", flush=True)
        if step % args.save_every == 0:
            if rank == 0:
                path = os.path.join(args.savedir, f"{tag}_step{step}.pt")
                torch.save({"model": model.module.state_dict(), "opt": opt.state_dict(), "step": step}, path)
                print(f"[rank 0] checkpoint -> {path}", flush=True)
            dist.barrier()
        time.sleep(0.01)
    print(f"[rank {rank}] finished", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=45875)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--savedir", default="spawn_ck")
    p.add_argument("--mkdir", action="store_true")
    p.add_argument("--name-style", choices=["config", "plain"], default="plain")
    p.add_argument("--data-tag", default="synthetic")
    p.add_argument("--note", default="")
    args = p.parse_args()
    if args.mkdir:
        os.makedirs(args.savedir, exist_ok=True)
    print(f"spawning {args.nprocs} workers, checkpoints in {args.savedir}", flush=True)
    mp.spawn(worker, args=(args.nprocs, args), nprocs=args.nprocs, join=True)


if __name__ == "__main__":
    main()
