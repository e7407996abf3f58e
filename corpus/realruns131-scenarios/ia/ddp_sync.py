"""Tiny DDP regression trainer with optional synchronisation faults (gloo, CPU).

Faults (--fault):
  none            healthy run
  skip_metric     --bad-rank skips the per-step metric all_reduce at --at-step (guarded by a buggy condition)
  shape_metric    --bad-rank all_reduces a metric tensor of a different length (per-rank class counts)
  barrier_rank0   only rank 0 enters the post-eval barrier (eval written under `if rank == 0:`)
  monitored       like barrier_rank0 but uses monitored_barrier for the sync
  slow            --bad-rank sleeps --delay seconds per step (straggler)
  uneven          ranks get different numbers of batches (DistributedSampler bypassed)
  broadcast_vs_reduce  --bad-rank calls broadcast where the others call all_reduce
"""
import argparse, faulthandler, logging, os, sys, time, warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--at-step", type=int, default=5)
p.add_argument("--steps", type=int, default=20)
p.add_argument("--pg-timeout", type=float, default=20)
p.add_argument("--watchdog", type=float, default=0, help="faulthandler dump after N s")
p.add_argument("--delay", type=float, default=0.5)
p.add_argument("--ramp", action="store_true")
p.add_argument("--eval-reps", type=int, default=20000)
p.add_argument("--step-sleep", type=float, default=0)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--progress", action="store_true")
p.add_argument("--noisy", action="store_true")
p.add_argument("--hb-every", type=int, default=0, help="heartbeat line every N steps")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

if args.watchdog:
    faulthandler.dump_traceback_later(args.watchdog, exit=True)

torch.manual_seed(0)
dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
log(f"initialized process group backend=gloo world_size={world} timeout={args.pg_timeout}s")

if args.noisy:
    # real-world-ish noise: deprecated API use, TF32 flag on CPU, etc.
    warnings.warn("torch.distributed._reduce_scatter_base is a private function and will be deprecated", FutureWarning)
    x = torch.arange(10.0)
    _ = torch.tensor(x)  # triggers the copy-construct UserWarning

model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05)

g = torch.Generator().manual_seed(1234 + rank)
N = 32 * args.steps
X = torch.randn(N, 16, generator=g)
W = torch.randn(16, 4, generator=torch.Generator().manual_seed(7))
Y = X @ W + 0.1 * torch.randn(N, 4, generator=g)

n_batches = args.steps
if args.fault == "uneven":
    # bug: each rank reads its own shard file whose length differs; no sampler padding
    n_batches = args.steps - (3 if rank == args.bad_rank else 0)
    log(f"loaded shard_{rank}.pt with {n_batches * 32} samples")

it = range(n_batches)
if args.progress:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", disable=False, mininterval=0, file=sys.stdout)

t_last = time.time()
for step in it:
    t0 = time.time()
    xb = X[step * 32:(step + 1) * 32]
    yb = Y[step * 32:(step + 1) * 32]
    if args.fault == "slow" and rank == args.bad_rank and step >= args.at_step:
        # e.g. rank on a throttled / overloaded host; --ramp: gets worse every step
        time.sleep(args.delay * ((step - args.at_step + 1) if args.ramp else 1))
    loss = nn.functional.mse_loss(ddp(xb), yb)
    if args.step_sleep:
        time.sleep(args.step_sleep)  # stands in for real compute
    t_fwd = time.time()
    opt.zero_grad()
    loss.backward()
    opt.step()
    t_bwd = time.time()

    # --- metric sync ---
    m = torch.tensor([loss.item(), 1.0])
    if args.fault == "skip_metric" and rank == args.bad_rank and step >= args.at_step:
        pass  # bug: `if not is_accumulating:` evaluated with a rank-local counter
    elif args.fault == "shape_metric" and rank == args.bad_rank and step == args.at_step:
        # per-class counts: this rank saw only 3 of the 4 classes in its batch
        cls = torch.bincount(yb.argmax(1).clamp(max=2)).float()
        dist.all_reduce(cls)
    elif args.fault == "shape_metric" and step == args.at_step:
        cls = torch.bincount(yb.argmax(1), minlength=4).float()
        dist.all_reduce(cls)
    elif args.fault == "broadcast_vs_reduce" and rank == args.bad_rank and step == args.at_step:
        dist.broadcast(m, src=0)
    else:
        dist.all_reduce(m)
    avg = m[0].item() / max(m[1].item(), 1)
    dt = time.time() - t0
    if not args.progress:
        log(f"step {step:3d} loss {loss.item():.4f} avg_loss {avg:.4f} step_time {dt*1000:.0f}ms (fwd {(t_fwd-t0)*1000:.0f}ms bwd+allreduce {(t_bwd-t_fwd)*1000:.0f}ms)")
    if args.hb_every and step % args.hb_every == 0:
        log(f"heartbeat: step={step} since_last={time.time()-t_last:.2f}s")
        t_last = time.time()

    if args.fault == "long_eval" and rank == args.bad_rank and step == args.at_step:
        # full validation pass done only on this rank (others go on to the next step)
        log("running full validation pass")
        te = time.time()
        with torch.no_grad():
            big = torch.randn(4096, 16)
            for r in range(args.eval_reps):
                _ = model(big).pow(2).mean()
                if r % 2000 == 0 and r:
                    log(f"  validated {r}/{args.eval_reps} batches ({time.time()-te:.1f}s)")
        log(f"validation done in {time.time()-te:.1f}s")
    if args.fault in ("barrier_rank0", "monitored") and step == args.at_step:
        if rank == 0:
            log("running validation on rank 0")
            with torch.no_grad():
                vl = nn.functional.mse_loss(model(X[:64]), Y[:64]).item()
            log(f"val_loss {vl:.4f}")
            if args.fault == "monitored":
                dist.monitored_barrier(timeout=timedelta(seconds=args.pg_timeout))
            else:
                dist.barrier()

log("training done, saving")
dist.barrier()
dist.destroy_process_group()
log("exit")
