"""Stuck-rank family. --fault:
  lockwait : rank R waits for a file lock that a previous job left behind (stale .lock), never reaches all_reduce
  evalloop : rank R's eval loop iterates an itertools.cycle()-wrapped loader (never ends); rank 0 uses monitored_barrier
  deadlock : single process; a metrics callback re-enters a non-reentrant threading.Lock -> hang; faulthandler watchdog dumps stacks
"""
import argparse, os, sys, time, math, logging, itertools, threading, faulthandler
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
sys.path.insert(0, os.path.dirname(__file__))

p = argparse.ArgumentParser()
p.add_argument("--fault", default="lockwait")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=15)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--timeout", type=int, default=25)
p.add_argument("--watchdog", type=int, default=20)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="[%(asctime)s] %(levelname)s %(message)s")
log = logging.getLogger("train")

def data(g):
    x = torch.randn(32, 20, generator=g); y = (x[:, :4].sum(-1) > 0).long(); return x, y

def main():
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = 0
    if world > 1:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
        rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 2))
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    g = torch.Generator().manual_seed(rank)
    lock_path = "/tmp/ck_shard_cache.lock"
    metrics_lock = threading.Lock()
    history = []
    def record(step, loss):
        with metrics_lock:
            history.append((step, loss))
            if len(history) % 10 == 0:
                summarize()
    def summarize():
        with metrics_lock:   # same non-reentrant lock, already held by record()
            m = sum(l for _, l in history[-10:]) / 10
        log.info(f"mean loss (last 10) {m:.4f}")
    if args.fault == "deadlock":
        faulthandler.dump_traceback_later(args.watchdog, exit=True)
    for step in range(1, args.steps + 1):
        if args.fault == "lockwait" and rank == args.rank and step == args.step:
            # refresh the shard cache; wait for the (stale) lock held by a crashed earlier job
            log.info(f"rank {rank}: refreshing shard cache, waiting for {lock_path}")
            while os.path.exists(lock_path):
                time.sleep(0.5)
        x, y = data(g)
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if args.fault == "deadlock":
            record(step, loss.item())
            faulthandler.cancel_dump_traceback_later(); faulthandler.dump_traceback_later(args.watchdog, exit=True)
        if step % 5 == 0 and rank == 0:
            log.info(f"step {step}/{args.steps} loss {loss.item():.4f}")
        if args.fault == "evalloop" and step % 20 == 0:
            # quick validation pass, then sync before the next epoch
            val = [data(torch.Generator().manual_seed(99 + i)) for i in range(4)]
            loader = itertools.cycle(val) if rank == args.rank else iter(val)  # "infinite" sampler for the small val split
            n, tot = 0, 0.0
            with torch.no_grad():
                for vx, vy in loader:
                    tot += F.cross_entropy(model(vx), vy).item(); n += 1
            if rank == 0: log.info(f"validation loss {tot / n:.4f} over {n} batches")
            dist.monitored_barrier(timeout=timedelta(seconds=args.timeout), wait_all_ranks=True)
    if rank == 0: log.info("done")
    if world > 1: dist.destroy_process_group()

if __name__ == "__main__":
    main()
