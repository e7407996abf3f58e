"""torch.multiprocessing.spawn DDP job wrapped in the user's own retry loop.

  --fault none_retry   rank 1's data shard is still being written by the prep step on the first attempt;
                       the launcher loop catches the failure, waits and respawns; attempt 2 succeeds
  --fault resume_hidden  resume from a checkpoint written by a run with a different hidden width
  --fault resume_optim   resume the optimizer state of a run that had a separate param group for the head
"""
import argparse
import os
import sys
import threading
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


def build(hidden):
    return nn.Sequential(nn.Linear(10, hidden), nn.GELU(), nn.Linear(hidden, 3))


def worker(rank, world, port, a):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    print(f"[worker {rank}] process group up (port {port})", flush=True)
    shard = os.path.join(a.data, f"shard-{rank:05d}.pt")
    data = torch.load(shard)
    X, Y = data["x"], data["y"]
    print(f"[worker {rank}] loaded {shard}: {len(X)} samples", flush=True)
    model = build(a.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    if a.resume:
        ck = torch.load(a.resume, map_location="cpu")
        model.load_state_dict(ck["model"])
        opt.load_state_dict(ck["optim"])
        print(f"[worker {rank}] resumed from {a.resume} at step {ck['step']}", flush=True)
    ddp = DDP(model)
    for step in range(1, a.steps + 1):
        i = (step * 16) % (len(X) - 16)
        loss = F.cross_entropy(ddp(X[i:i + 16]), Y[i:i + 16])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            print(f"[worker {rank}] step {step} loss {loss.item():.4f}", flush=True)
    if rank == 0 and a.save:
        torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": a.steps}, a.save)
        print(f"[worker 0] saved {a.save}", flush=True)
    dist.barrier()
    dist.destroy_process_group()


def write_shard(path, n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 10, generator=g)
    torch.save({"x": x, "y": (x[:, :3].argmax(1))}, path)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none_retry")
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=47911)
    p.add_argument("--data", default="shards")
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--resume", default="")
    p.add_argument("--save", default="")
    p.add_argument("--max-attempts", type=int, default=3)
    a = p.parse_args()
    os.makedirs(a.data, exist_ok=True)
    write_shard(os.path.join(a.data, "shard-00000.pt"), 256, 0)
    if a.fault == "none_retry":
        # the prep step for shard 1 is still running in the background
        def prep():
            time.sleep(8)
            write_shard(os.path.join(a.data, "shard-00001.pt"), 256, 1)
            print("[prep] shard-00001.pt written", flush=True)
        threading.Thread(target=prep, daemon=True).start()
    else:
        for r in range(1, a.world):
            write_shard(os.path.join(a.data, f"shard-{r:05d}.pt"), 256, r)

    for attempt in range(1, a.max_attempts + 1):
        port = a.port + attempt - 1
        print(f"=== launch attempt {attempt}/{a.max_attempts}: spawning {a.world} workers ===", flush=True)
        try:
            mp.spawn(worker, args=(a.world, port, a), nprocs=a.world, join=True)
            print(f"=== attempt {attempt} finished OK ===", flush=True)
            return 0
        except Exception as e:
            if a.fault != "none_retry":
                raise
            print(f"=== attempt {attempt} failed: {type(e).__name__}; retrying in 5s ===", flush=True)
            traceback.print_exc()
            time.sleep(5)
    return 1


if __name__ == "__main__":
    sys.exit(main())
