"""DDP regression trainer (gloo, CPU) used for collective-hang scenarios.

Faults (selected by --fault, applied on --bad-rank at --bad-step):
  none        healthy run
  rank0_eval  rank 0 runs a full validation pass inside the step loop while the others keep training
  uneven      each rank takes its own slice of the file list (no DistributedSampler) -> unequal batch counts
  flock       the bad rank takes an exclusive lock on the shared cache before refreshing it
  prompt      rank 0 asks on stdin whether to overwrite an existing output dir
  monitored   end-of-epoch sync through dist.monitored_barrier while the bad rank writes a slow export
"""
import argparse
import datetime
import faulthandler
import fcntl
import logging
import os
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--fault", default="none",
               choices=["none", "rank0_eval", "uneven", "flock", "prompt", "monitored"])
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=10)
p.add_argument("--pg-timeout", type=int, default=15)
p.add_argument("--stack-dump-after", type=int, default=0, help="faulthandler dump of all threads after N s")
p.add_argument("--ts", action="store_true", help="python logging with timestamps")
p.add_argument("--step-sleep", type=float, default=0.15)
p.add_argument("--out-dir", default="/work/rr125/hj/runs/out")
p.add_argument("--lock-file", default="/work/rr125/hj/runs/cache/.tokenized.lock")
p.add_argument("--n-samples", type=int, default=1000)
p.add_argument("--bs", type=int, default=16)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.ts:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

if args.stack_dump_after:
    faulthandler.dump_traceback_later(args.stack_dump_after, repeat=True, exit=False)

os.makedirs(os.path.dirname(os.path.abspath(args.out_dir)) or ".", exist_ok=True)
with open(f"/work/rr125/hj/runs/pid.{os.environ.get('MASTER_PORT')}.rank{rank}", "w") as f:
    f.write(str(os.getpid()))

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
log(f"initialized process group: backend=gloo world_size={world} pid={os.getpid()}")
torch.manual_seed(0)
torch.set_num_threads(1)

model = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.01)
g = torch.Generator().manual_seed(1234)
X = torch.randn(args.n_samples, 32, generator=g)
w_true = torch.randn(32, 1, generator=g)
Y = X @ w_true + 0.1 * torch.randn(args.n_samples, 1, generator=g)

if args.fault == "uneven":
    # "shard by file": files are 50-sample chunks, each rank takes files[rank::world]
    files = [list(range(i, min(i + 50, args.n_samples))) for i in range(0, args.n_samples, 50)]
    mine = [i for f in files[rank::world] for i in f]
    idx_batches = [mine[i:i + args.bs] for i in range(0, len(mine), args.bs)]
    log(f"{len(files[rank::world])} shard files, {len(mine)} samples, {len(idx_batches)} batches per epoch")
else:
    perm = torch.randperm(args.n_samples, generator=torch.Generator().manual_seed(7)).tolist()
    mine = perm[rank::world]
    idx_batches = [mine[i:i + args.bs] for i in range(0, len(mine), args.bs)][: args.steps]


def evaluate():
    # full validation pass over a large held-out set (not sharded)
    gv = torch.Generator().manual_seed(99)
    tot = 0.0
    with torch.no_grad():
        for _ in range(400):
            xv = torch.randn(512, 32, generator=gv)
            yv = xv @ w_true
            big = torch.nn.functional.linear(xv, torch.randn(2048, 32, generator=gv))
            tot += (model(xv) - yv).pow(2).mean().item() + 0.0 * big.sum().item()
            time.sleep(0.05)
    return tot / 400


step = 0
for epoch in range(args.epochs):
    for b in idx_batches:
        step += 1
        if args.fault == "flock" and rank == args.bad_rank and step == args.bad_step:
            os.makedirs(os.path.dirname(args.lock_file), exist_ok=True)
            log(f"refreshing tokenized cache, acquiring {args.lock_file}")
            fd = open(args.lock_file, "w")
            fcntl.flock(fd, fcntl.LOCK_EX)
            log("cache lock acquired")
        if args.fault == "prompt" and rank == 0 and step == args.bad_step:
            os.makedirs(args.out_dir, exist_ok=True)
            ans = input(f"Output directory {args.out_dir} already exists and is not empty. Overwrite? [y/N] ")
            if ans.strip().lower() != "y":
                log("keeping existing output dir, writing to a new subfolder")
        x, y = X[b], Y[b]
        loss = nn.functional.mse_loss(ddp(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 5 == 0:
            t = loss.detach().clone()
            dist.all_reduce(t)
            log(f"epoch {epoch} step {step} loss {t.item() / world:.4f} lr 0.01")
        if args.fault == "rank0_eval" and rank == 0 and step == args.bad_step:
            log("running validation")
            log(f"val_loss {evaluate():.4f}")
        time.sleep(args.step_sleep)
    if args.fault == "monitored":
        if rank == args.bad_rank:
            log(f"exporting epoch {epoch} weights to {args.out_dir}")
            os.makedirs(args.out_dir, exist_ok=True)
            # slow export: many small files, fsync each
            for i in range(300):
                with open(os.path.join(args.out_dir, f"part{i:04d}.bin"), "wb") as f:
                    f.write(os.urandom(1 << 16))
                    f.flush()
                    os.fsync(f.fileno())
                time.sleep(0.1)
        dist.monitored_barrier(timeout=datetime.timedelta(seconds=args.pg_timeout), wait_all_ranks=True)
        log(f"epoch {epoch} done")

if args.fault == "uneven":
    log("training loop finished, waiting for other ranks")
dist.barrier()
if rank == 0:
    os.makedirs(args.out_dir, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.out_dir, "final.pt"))
    log(f"saved {args.out_dir}/final.pt")
dist.destroy_process_group()
log("done")
