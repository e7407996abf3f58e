"""Regression model trained with torch.multiprocessing.spawn (gloo), optional resume from
per-rank optimizer shards, optional faults and healthy-but-noisy behaviour."""
import argparse, os, sys, time, datetime, math, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--world", type=int, default=3)
p.add_argument("--port", type=int, default=36020)
p.add_argument("--steps", type=int, default=15)
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--save-shards", default=None)
p.add_argument("--resume", default=None)
p.add_argument("--noisy", action="store_true")
p.add_argument("--pg-timeout", type=float, default=20)
args = p.parse_args()


def build(rank):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1))


def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world,
                            timeout=datetime.timedelta(seconds=args.pg_timeout))
    model = DDP(build(rank))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=5, gamma=0.5)
    scaler = torch.amp.GradScaler("cuda", enabled=args.noisy)   # config copied from the GPU recipe
    if args.resume:
        shard = os.path.join(args.resume, f"optim_rank{rank}.pt")
        state = torch.load(shard, map_location="cpu", weights_only=True)
        opt.load_state_dict(state["optimizer"])
        print(f"[rank {rank}] resumed optimizer shard {shard} (step {state['step']})", flush=True)
    g = torch.Generator().manual_seed(100 + rank)
    w_true = torch.randn(16, 1, generator=g)
    if args.noisy and rank == 0:
        sched.step()   # scheduler stepped at start of epoch (legacy order)
    for step in range(args.steps):
        x = torch.randn(32, 16, generator=g)
        y = (x @ w_true).squeeze(-1) + 0.1 * torch.randn(32, generator=g)
        if args.fault == "sigkill" and rank == args.fault_rank and step == args.fault_step:
            open(f"/work/rr78/cb/work/spawn_kill_{os.getpid()}", "w").close()
            time.sleep(0.5)
        out = model(x)
        if args.noisy:
            loss = F.mse_loss(out, y)            # out is [32,1], y is [32]: broadcasts
        else:
            loss = F.mse_loss(out.squeeze(-1), y)
        if args.noisy and rank == 2 and step == 7:
            print(f"[rank {rank}] WARNING: loss {loss.item():.3f} above spike threshold 3.0x EMA at step {step}; "
                  "continuing (1 of 5 tolerated)", flush=True)
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        lt = loss.detach().clone(); dist.all_reduce(lt)
        if rank == 0:
            print(f"[rank 0] step {step:02d} loss={lt.item()/world:.4f} lr={sched.get_last_lr()[0]:.2e}", flush=True)
        time.sleep(0.1)
    if args.save_shards:
        os.makedirs(args.save_shards, exist_ok=True)
        torch.save({"optimizer": opt.state_dict(), "step": args.steps},
                   os.path.join(args.save_shards, f"optim_rank{rank}.pt"))
    dist.barrier()
    if rank == 0:
        print("[rank 0] done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    mp.spawn(worker, args=(args.world,), nprocs=args.world, join=True)
