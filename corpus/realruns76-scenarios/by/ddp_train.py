"""Tiny DDP training loop (gloo, CPU) used for network / set-up failure scenarios.

Launched by torchrun (env:// rendezvous) unless --init-method is given.
Faults are selected with --fault, --fault-rank and --fault-step.
"""
import argparse
import datetime
import logging
import os
import signal
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=30)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--pg-timeout", type=float, default=30.0)
p.add_argument("--init-method", default=None)
p.add_argument("--rank", type=int, default=None)
p.add_argument("--world-size", type=int, default=None)
p.add_argument("--fault", default="none",
               choices=["none", "hang", "sigkill", "exit", "monitored", "sleep-before-init",
                        "init-twice", "no-init-allreduce", "extra-allreduce", "sigkill-first-attempt", "store-key"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=10)
p.add_argument("--log-style", choices=["print", "logging", "tqdm"], default="print")
p.add_argument("--step-sleep", type=float, default=0.05)
p.add_argument("--noisy", action="store_true", help="emit the usual harmless warnings")
args = p.parse_args()

env_rank = int(os.environ.get("RANK", args.rank if args.rank is not None else 0))

if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{env_rank}] %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


def out(msg):
    if args.log_style == "logging":
        log.info(msg)
    else:
        print(f"[rank{env_rank}] {msg}", flush=True)


if args.fault == "sleep-before-init" and env_rank == args.fault_rank:
    out(f"loading shards from local cache ...")
    time.sleep(args.fault_step)

if args.fault == "no-init-allreduce":
    # bug: the script was started with plain python, and the init is behind a check
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
else:
    kw = dict(backend="gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    if args.init_method:
        kw.update(init_method=args.init_method, rank=args.rank, world_size=args.world_size)
    out(f"init_process_group({kw.get('init_method', 'env://')}) world_size={os.environ.get('WORLD_SIZE', args.world_size)}")
    dist.init_process_group(**kw)
    if args.fault == "init-twice":
        # a helper module (e.g. a metrics util) initialises the group again
        dist.init_process_group(**kw)

rank = dist.get_rank() if dist.is_initialized() else 0
world = dist.get_world_size() if dist.is_initialized() else 1
torch.manual_seed(0)
out(f"process group ready: rank {rank}/{world} backend={dist.get_backend() if dist.is_initialized() else 'none'}")

X = torch.randn(4096, 32)
y = (X[:, :4].sum(1) > 0).long()
ds = TensorDataset(X, y)
if dist.is_initialized():
    sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True)
else:
    sampler = None
dl = DataLoader(ds, batch_size=args.batch, sampler=sampler, shuffle=sampler is None)

model = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
if dist.is_initialized():
    model = DDP(model, find_unused_parameters=args.noisy)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
lossf = nn.CrossEntropyLoss()

if args.fault == "store-key":
    # side-channel store: rank 0 builds the shard index, the others wait for it
    side = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]) + 1, world,
                         is_master=(rank == 0), timeout=datetime.timedelta(seconds=args.pg_timeout))
    if rank == 0:
        out("building shard index ...")
        side.set("shard_idx_ready", "1")   # bug: readers wait for 'shard_index_ready'
    else:
        out("waiting for shard index from rank 0")
        side.wait(["shard_index_ready"])
    out("shard index available")

if args.fault == "no-init-allreduce":
    t = torch.tensor([float(len(ds))])
    dist.all_reduce(t)  # sync dataset size across ranks

step = 0
for epoch in range(args.epochs):
    if sampler is not None:
        sampler.set_epoch(epoch)
    it = dl
    if args.log_style == "tqdm":
        from tqdm import tqdm
        it = tqdm(dl, total=min(len(dl), args.steps), desc=f"rank{rank} epoch {epoch}", mininterval=0.5)
    for xb, yb in it:
        if step >= args.steps * (epoch + 1):
            break
        if rank == args.fault_rank and step == args.fault_step:
            if args.fault == "hang":
                out("evaluating on held-out shard ...")
                time.sleep(3600)
            elif args.fault == "sigkill":
                os.kill(os.getpid(), signal.SIGKILL)
            elif args.fault == "sigkill-first-attempt" and os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0":
                # transient: the worker is killed once (e.g. by a node-level watchdog); restarts are clean
                os.kill(os.getpid(), signal.SIGKILL)
            elif args.fault == "exit":
                out("no more data in shard, leaving loop")
                sys.exit(0)
            elif args.fault == "extra-allreduce":
                # rank-local extra metric reduction with a differently-shaped tensor
                m = torch.zeros(3)
                dist.all_reduce(m)
        if args.fault == "monitored" and step == args.fault_step:
            if rank == args.fault_rank:
                out("writing checkpoint shard ...")
                time.sleep(3600)
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=args.pg_timeout))
        opt.zero_grad()
        loss = lossf(model(xb), yb)
        loss.backward()
        opt.step()
        if step % 5 == 0:
            lt = loss.detach().clone()
            if dist.is_initialized():
                dist.all_reduce(lt)
                lt /= world
            if rank == 0:
                out(f"epoch {epoch} step {step} loss {lt.item():.4f} lr 0.1")
        step += 1
        time.sleep(args.step_sleep)

if dist.is_initialized():
    dist.barrier()
out("training finished")
if dist.is_initialized():
    dist.destroy_process_group()
