"""torch.multiprocessing.spawn launcher with file:// or tcp:// init; flags select faults."""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist, torch.multiprocessing as mp
from tqdm import tqdm

def worker(rank, a, collate=None):
    dist.init_process_group("gloo", init_method=a.init, rank=rank, world_size=a.nproc,
                            timeout=timedelta(seconds=a.timeout))
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 4)))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    bar = tqdm(range(a.steps), desc=f"rank{rank}", disable=rank != 0, mininterval=0, ncols=90)
    for step in bar:
        x = torch.randn(8, 16, generator=g); y = torch.randint(0, 4, (8,), generator=g)
        if collate is not None: x = collate(x)
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        bar.set_postfix(loss=f"{loss.item():.4f}")
        time.sleep(0.2)
    if rank == 0:
        print(f"final loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()

def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--init", default="tcp://127.0.0.1:29830")
    p.add_argument("--nproc", type=int, default=2)
    p.add_argument("--steps", type=int, default=15)
    p.add_argument("--timeout", type=int, default=20)
    p.add_argument("--fault", default="none")
    return p.parse_args()

if os.environ.get("NO_MAIN_GUARD") == "1":
    # script as first written: launch at module level
    a = parse()
    mp.spawn(worker, args=(a,), nprocs=a.nproc, start_method="spawn")

if __name__ == "__main__":
    a = parse()
    if a.fault == "lambda-collate":
        mp.spawn(worker, args=(a, lambda t: t * 0.5), nprocs=a.nproc)
    else:
        mp.spawn(worker, args=(a,), nprocs=a.nproc)
    print("all workers done")
