"""Small DDP (gloo, CPU) training loop used to induce stops, kills and hangs.

Flags select the fault, the rank it hits and the step. External faults (kill -STOP,
kill -KILL, prlimit) are applied by the driving shell, which watches the per-rank
progress files written under --statedir.
"""
import argparse
import ctypes
import faulthandler
import logging
import mmap
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--fault", default="none",
               choices=["none", "segv-native", "sigbus-mmap", "extra-barrier", "big-eval", "ckpt-wait"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--pg-timeout", type=float, default=30)
p.add_argument("--mbarrier-every", type=int, default=0)
p.add_argument("--mbarrier-timeout", type=float, default=15)
p.add_argument("--step-sleep", type=float, default=0.2)
p.add_argument("--statedir", default="state")
p.add_argument("--hang-dump", type=float, default=0)
p.add_argument("--use-logging", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--ckpt-dir", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--hidden", type=int, default=256)
p.add_argument("--noise", action="store_true")
p.add_argument("--shard-ckpt", action="store_true")
p.add_argument("--trackers", action="store_true")
p.add_argument("--init-delay-rank", type=int, default=-1)
p.add_argument("--init-delay", type=float, default=0)
args = p.parse_args()

rank = int(os.environ.get("RANK", "0"))
world = int(os.environ.get("WORLD_SIZE", "1"))
os.makedirs(args.statedir, exist_ok=True)
with open(os.path.join(args.statedir, f"rank{rank}.pid"), "w") as f:
    f.write(str(os.getpid()))


def mark(what):
    with open(os.path.join(args.statedir, f"rank{rank}.state"), "w") as f:
        f.write(what)


if args.use_logging:
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train")
    say = log.info
else:
    def say(msg):
        print(f"[rank{rank}] {msg}", flush=True)

if args.hang_dump:
    # dump all thread stacks if a step takes too long (our "py-spy" for stuck jobs)
    faulthandler.enable()

say(f"starting pid={os.getpid()} world_size={world} torch={torch.__version__}")
mark("startup")

if args.fault == "segv-native" and args.fault_step == -1 and rank == args.fault_rank:
    # "fast" native shard reader; the index header pointer is garbage for this shard
    say("loading native shard index via libshardidx shim")
    hdr = ctypes.c_uint64(0x7ffd_dead_b000)
    ctypes.string_at(hdr.value, 64)

if rank == args.init_delay_rank:
    time.sleep(args.init_delay)
mark("rendezvous")
dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
say(f"process group ready: backend={dist.get_backend()} rank={dist.get_rank()}/{dist.get_world_size()}")
mark("training")

if args.trackers:
    # optional experiment tracking; fall back to plain logs when the tracker is missing
    try:
        from torch.utils.tensorboard import SummaryWriter
        tb = SummaryWriter(log_dir=os.path.join(args.statedir, "tb"))
    except Exception:
        logging.getLogger("train").exception("TensorBoard unavailable, metrics go to stdout only")
        tb = None
    scaler = torch.cuda.amp.GradScaler()  # shared config with the GPU cluster

torch.manual_seed(0)
model = nn.Sequential(nn.Linear(64, args.hidden), nn.ReLU(), nn.Linear(args.hidden, args.hidden), nn.ReLU(),
                      nn.Linear(args.hidden, 10))
if args.noise:
    # an auxiliary head that is only used in eval -> DDP warns / unused params
    pass
ddp = DDP(model, find_unused_parameters=args.noise)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
if args.noise:
    sched.step()  # stepping the scheduler before the optimizer -> torch UserWarning
    warnings.warn("TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only storage class.", UserWarning)

g = torch.Generator().manual_seed(1234 + rank)
X = torch.randn(512, 64, generator=g)
W = torch.randn(64, 10, generator=torch.Generator().manual_seed(7))
Y = (X @ W).argmax(1)
lossf = nn.CrossEntropyLoss()

it = range(1, args.steps + 1)
if args.use_tqdm and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)

for step in it:
    with open(os.path.join(args.statedir, f"rank{rank}.step"), "w") as f:
        f.write(str(step))
    if args.hang_dump:
        faulthandler.dump_traceback_later(args.hang_dump, repeat=False, exit=False)
    idx = torch.randint(0, 512, (32,), generator=g)
    xb, yb = X[idx], Y[idx]
    if args.fault == "segv-native" and step == args.fault_step and rank == args.fault_rank:
        say("forward: using native fused gather for batch")
        ctypes.string_at(0x7ffd_dead_b000 + step, 4096)
    out = ddp(xb)
    loss = lossf(out, yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step()
    time.sleep(args.step_sleep)
    l = loss.detach().clone()
    dist.all_reduce(l)
    l /= world
    if step % 5 == 0 or step == 1:
        msg = f"step {step}/{args.steps} loss={l.item():.4f} lr={sched.get_last_lr()[0]:.4g}"
        if args.use_tqdm and rank == 0:
            it.write(msg)
        elif not args.use_tqdm:
            say(msg)

    if args.fault == "big-eval" and rank == args.fault_rank and step == args.fault_step:
        # eval on the "full" validation set: materialise all activations at once
        say("running eval on full validation set (4M rows cached)")
        Xv = torch.empty(1 << 22, 64)
        Xv.normal_()
        with torch.no_grad():
            acc = (model(Xv[:4096]).argmax(1) == 0).float().mean()
        say(f"eval acc={acc.item():.3f}")

    if args.fault == "extra-barrier" and step == args.fault_step and rank == args.fault_rank:
        # rank 0 writes a summary and "waits for everyone" -- only rank 0 enters this branch
        say("writing eval summary, syncing ranks")
        dist.barrier()

    if args.ckpt_every and step % args.ckpt_every == 0:
        mark(f"ckpt{step}")
        path = os.path.join(args.ckpt_dir, f"ckpt_step{step}_rank{rank}.pt")
        if rank == 0 or args.fault in ("sigbus-mmap",) or args.shard_ckpt:
            say(f"saving checkpoint {path}")
            state = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}
            torch.save(state, path)
            if args.fault == "sigbus-mmap" and rank == args.fault_rank and step == args.fault_step:
                # verify the shard through a memory map; the rotation job truncates old files
                with open(path, "r+b") as fh:
                    mm = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
                    os.truncate(path, 0)  # log-rotation of previous shards (same name after restart)
                    say(f"verifying checkpoint header: {mm[:8]!r}")
                    s = sum(mm[len(mm) // 2:len(mm) // 2 + 4096])
                    say(f"checksum {s}")
            if args.shard_ckpt:
                # push the shard to the object store (slow network storage)
                time.sleep(2.0)
                say(f"shard {rank} uploaded")
        if args.fault == "ckpt-wait":
            # other ranks wait on the store until rank 0 confirms the checkpoint is written
            store = dist.distributed_c10d._get_default_store()
            if rank == 0:
                store.set(f"ckpt_done_{step}", "1")
            else:
                store.wait([f"ckpt_done_{step}"], timedelta(seconds=args.pg_timeout))
        mark("training")

    if args.mbarrier_every and step % args.mbarrier_every == 0:
        dist.monitored_barrier(timeout=timedelta(seconds=args.mbarrier_timeout))

if args.hang_dump:
    faulthandler.cancel_dump_traceback_later()
if args.use_tqdm and rank == 0:
    it.close()
say("training finished")
dist.destroy_process_group()
