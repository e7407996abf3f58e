"""torch.multiprocessing.spawn launcher for a tiny DDP model; per-rank env overrides select the fault."""
import argparse, datetime, os, sys, time
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel as DDP

def worker(rank, args):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(args.world_size)
    # per-rank overrides from a (buggy) launcher config, e.g. --override 1:MASTER_PORT=44431
    for ov in args.override:
        r, kv = ov.split(":", 1)
        if int(r) == rank:
            k, v = kv.split("=", 1); os.environ[k] = v
    if args.kill_rank == rank:
        pass
    print(f"[rank {rank}] init_process_group(env://) MASTER_ADDR={os.environ['MASTER_ADDR']} "
          f"MASTER_PORT={os.environ['MASTER_PORT']} WORLD_SIZE={os.environ['WORLD_SIZE']} RANK={os.environ['RANK']}", flush=True)
    dist.init_process_group("gloo", init_method=args.init, timeout=datetime.timedelta(seconds=args.timeout))
    r, w = dist.get_rank(), dist.get_world_size()
    print(f"[rank {r}] joined group of {w}", flush=True)
    torch.manual_seed(0)
    model = DDP(nn.Linear(8, 1))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    x = torch.randn(256, 8); y = x[:, :1] * 3
    for step in range(args.steps):
        if args.kill_rank == r and step == args.kill_step:
            # simulate the kernel OOM killer taking this worker
            os.kill(os.getpid(), 9)
        loss = nn.functional.mse_loss(model(x[r::w]), y[r::w])
        opt.zero_grad(); loss.backward(); opt.step()
        if args.sleep: time.sleep(args.sleep)
        if r == 0 and step % 5 == 0:
            print(f"epoch 0 step {step}/{args.steps} loss={loss.item():.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    if r == 0: print("done", flush=True)

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--world-size", type=int, default=2)
    p.add_argument("--init", default="env://")
    p.add_argument("--timeout", type=int, default=20)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--sleep", type=float, default=0)
    p.add_argument("--override", action="append", default=[])
    p.add_argument("--kill-rank", type=int, default=-1)
    p.add_argument("--kill-step", type=int, default=5)
    args = p.parse_args()
    mp.spawn(worker, args=(args,), nprocs=args.world_size, join=True)
