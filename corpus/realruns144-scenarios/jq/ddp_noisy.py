"""Small DDP regression/classification trainer that prints a lot of training noise.

--case selects a behaviour (healthy-but-noisy or a fault), --fault-rank / --fault-step where it applies.
"""
import argparse
import datetime
import logging
import os
import sys
import time
import traceback
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--case", default="plain")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=6)
p.add_argument("--steps", type=int, default=12)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--stamp", action="store_true", help="timestamped logging")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--resume", default="")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--save-every", type=int, default=0)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))

fmt = "%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s" if args.stamp else "[rank%(rank)s] %(message)s"
logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout)
old_factory = logging.getLogRecordFactory()


def _factory(*a, **k):
    r = old_factory(*a, **k)
    r.rank = rank
    return r


logging.setLogRecordFactory(_factory)
log = logging.getLogger("train")


class Net(nn.Module):
    def __init__(self, d_in=32, hidden=64, n_out=4, aux=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(d_in, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, n_out)
        self.aux_head = nn.Linear(hidden, n_out) if aux else None

    def forward(self, x, use_aux=False):
        h = self.body(x)
        out = self.head(h)
        if use_aux and self.aux_head is not None:
            out = out + 0.1 * self.aux_head(h)
        return out


def make_data(n=512, d=32, n_cls=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, n_cls, generator=g)
    y = (x @ w).argmax(1)
    return TensorDataset(x, y)


# ---------------------------------------------------------------- process group
backend = "gloo"
if args.case == "nccl_fallback":
    # config asked for nccl; fall back to gloo when the build has none
    try:
        dist.init_process_group("nccl", timeout=datetime.timedelta(seconds=args.pg_timeout))
        backend = "nccl"
    except Exception:
        log.warning("NCCL init failed, falling back to gloo. Traceback follows:\n%s", traceback.format_exc())
if not dist.is_initialized():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
log.info("process group up: backend=%s world_size=%d", dist.get_backend(), world)

torch.manual_seed(0)
ds = make_data()
sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=1)
dl = DataLoader(ds, batch_size=args.bs, sampler=sampler)

model = Net(hidden=args.hidden, aux=args.case in ("unused", "find_unused_quiet"))
if args.resume:
    log.info("resuming from %s", args.resume)
    sd = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(sd)
find_unused = args.case == "find_unused_quiet"
ddp = DDP(model, find_unused_parameters=find_unused)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()

sched = None
if args.case == "onecycle":
    # steps_per_epoch computed from the full dataset divided by world size with floor,
    # but with grad-accumulation the loop steps the scheduler per micro-batch
    steps_per_epoch = len(ds) // (args.bs * world) // 2  # accum=2 assumed
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, epochs=2, steps_per_epoch=steps_per_epoch)
    log.info("OneCycleLR total_steps=%d", sched.total_steps)

if args.case == "deprecations":
    # old-style AMP code path kept from the GPU version of the script
    scaler = torch.cuda.amp.GradScaler(enabled=True)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=4, gamma=0.5)

step = 0
epochs = 2 if args.case == "onecycle" else 100
done = False
t0 = time.time()
for epoch in range(epochs):
    sampler.set_epoch(epoch)
    for x, y in dl:
        step += 1
        if args.case == "deprecations":
            with torch.cuda.amp.autocast(enabled=True):
                out = ddp(x)
                loss = loss_fn(out, y)
            sched.step() if step == 1 else None  # scheduler stepped before optimizer on first step
        elif args.case == "unused":
            use_aux = not (rank == args.fault_rank and step >= args.fault_step)
            out = ddp(x, use_aux=use_aux)
            loss = loss_fn(out, y)
        elif args.case == "find_unused_quiet":
            out = ddp(x, use_aux=True)
            loss = loss_fn(out, y)
        elif args.case == "nan_skip":
            if rank == args.fault_rank and step == args.fault_step:
                x = x.clone()
                x[3, 5] = float("inf")  # a corrupt feature row in this rank's batch
            out = ddp(x)
            loss = loss_fn(out, y)
        else:
            out = ddp(x)
            loss = loss_fn(out, y)
        opt.zero_grad()
        loss.backward()
        if args.case == "nan_skip":
            finite = torch.tensor([float(torch.isfinite(loss).item())])
            dist.all_reduce(finite, op=dist.ReduceOp.MIN)
            if finite.item() == 0:
                warnings.warn(f"non-finite loss ({loss.item()}) on at least one rank at step {step}; skipping optimizer step")
                log.warning("step %d: loss=%s on this rank, gradients zeroed, update skipped", step, loss.item())
                opt.zero_grad()
                continue
        opt.step()
        if args.case == "deprecations" and step > 1:
            sched.step()
        if args.case == "onecycle":
            sched.step()
            if step % 2 == 0:
                pass
        acc = (out.argmax(1) == y).float().mean().item()
        lr = opt.param_groups[0]["lr"]
        if step % 2 == 0 or step == 1:
            log.info("epoch %d step %d loss %.4f acc %.3f lr %.4g (%.1fs)", epoch, step, loss.item(), acc, lr, time.time() - t0)
        if args.save_every and step % args.save_every == 0 and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step:05d}.pt")
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, path)
            log.info("checkpoint -> %s", path)
        if args.case == "mbarrier" and step % 4 == 0:
            # periodic validation: rank 0..N all sync before the next block of steps
            if rank == args.fault_rank and step >= args.fault_step:
                log.info("running extended validation on this rank's shard")
                time.sleep(40)  # slow eval reading from remote storage
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=10))
            log.info("validation sync at step %d passed", step)
        if args.case != "onecycle" and step >= args.steps:
            done = True
            break
    if done:
        break

dist.barrier()
if rank == 0:
    os.makedirs(args.ckpt_dir, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(args.ckpt_dir, "final.pt"))
    log.info("saved %s", os.path.join(args.ckpt_dir, "final.pt"))
log.info("training finished in %.1fs", time.time() - t0)
dist.destroy_process_group()
