"""Tiny data-parallel regression trainer that syncs gradients by hand with
torch.distributed collectives (gloo).  --fault selects a bug in the sync code.

Launch with torchrun (env:// rendezvous).
"""
import argparse
import logging
import os
import sys
import threading
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1, help="rank that carries the bug")
p.add_argument("--step", type=int, default=3, help="step at which the bug triggers")
p.add_argument("--steps", type=int, default=8)
p.add_argument("--timeout", type=int, default=20)
p.add_argument("--log-ts", action="store_true", help="use logging with timestamps")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--cache-batches", type=int, default=40)
args = p.parse_args()

if args.log_ts:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s")
    _old = logging.getLogRecordFactory()

    def _factory(*a, **k):
        r = _old(*a, **k)
        r.rank = os.environ.get("RANK", "?")
        return r
    logging.setLogRecordFactory(_factory)
log = logging.getLogger("sync_trainer")


def say(msg):
    if args.log_ts:
        log.info(msg)
    else:
        print(f"[rank{os.environ.get('RANK')}] {msg}", flush=True)


dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)


def setup_logging_helper():
    # "library" helper that (re)initialises distributed for its own comms
    if args.fault == "init_twice":
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))


model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.05)
# broadcast initial weights from rank 0
for prm in model.parameters():
    dist.broadcast(prm.data, src=0)
say(f"initialised world_size={world}, params={sum(p.numel() for p in model.parameters())}")

setup_logging_helper()

# per-rank synthetic shard
g = torch.Generator().manual_seed(100 + rank)
n_samples = 64
if args.fault == "uneven_shard" and rank == args.rank:
    n_samples = 64 - 16 * 2   # this rank's shard was filtered harder
X = torch.randn(n_samples, 16, generator=g)
Y = X[:, :3].sum(1, keepdim=True) + 0.1 * torch.randn(n_samples, 1, generator=g)
bs = 8

metric_group = None
if args.fault == "newgroup_partial":
    # only the "logging" ranks create the sub-group (bug: new_group must be called on every rank)
    if rank in (0, 1):
        say("creating metrics subgroup [0, 1]")
        metric_group = dist.new_group(ranks=[0, 1])


class RunConfig:
    def __init__(self):
        self.lr = 0.05
        self.lock = threading.Lock()      # guards the live metrics dict
        self.metrics = {}


it = range(args.steps)
if args.tqdm:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank}", disable=rank != 0)

for step in it:
    lo = step * bs
    if lo + bs > n_samples:
        say(f"shard exhausted at step {step}, finishing")
        break
    xb, yb = X[lo:lo + bs], Y[lo:lo + bs]
    loss = nn.functional.mse_loss(model(xb), yb)
    opt.zero_grad()
    loss.backward()

    if args.fault == "hang" and rank == args.rank and step == args.step:
        # waits for a sentinel file that the (missing) preprocessing job was supposed to write
        sentinel = "/work/rr91/ea/tmp/prep_done.flag"
        say(f"waiting for {sentinel} before syncing")
        while not os.path.exists(sentinel):
            time.sleep(0.5)

    # --- gradient all-reduce ---
    grads = [prm.grad for prm in model.parameters()]
    flat = torch.cat([gr.reshape(-1) for gr in grads])
    if args.fault == "shape" and rank == args.rank and step == args.step:
        # bug: this rank forgot to include the bias grads of the last layer
        flat = torch.cat([gr.reshape(-1) for gr in grads[:-1]])
    if args.fault == "dtype" and rank == args.rank and step == args.step:
        flat = flat.double()   # bug: grads accumulated in fp64 on this rank
    dist.all_reduce(flat)
    flat /= world
    off = 0
    for gr in grads:
        n = gr.numel()
        gr.copy_(flat[off:off + n].view_as(gr))
        off += n
    opt.step()

    # --- metrics ---
    lv = torch.tensor([loss.item()])
    if args.fault == "skip_branch" and rank == args.rank and step == args.step:
        # bug: early `continue` when the local loss is small skips the metric reduce
        say(f"step {step}: batch flagged eval-only (loss={lv.item():.4f}), skipping metric sync")
        continue
    if metric_group is not None:
        dist.all_reduce(lv, group=metric_group)
        lv /= 2
    else:
        dist.all_reduce(lv)
        lv /= world
    if rank == 0 and not args.tqdm:
        say(f"step {step} loss {lv.item():.4f}")

    if args.fault == "gather_list" and step == args.step:
        # per-rank loss table for the dashboard; size taken from the cluster config (4 workers)
        n_workers = int(os.environ.get("CLUSTER_WORKERS", "4"))
        table = [torch.zeros(1) for _ in range(n_workers)]
        dist.all_gather(table, torch.tensor([loss.item()]))
        say("per-rank losses " + " ".join(f"{t.item():.3f}" for t in table))

    if args.fault == "sendrecv" and step == args.step:
        # ring exchange of a token count; bug: every rank posts its blocking recv first
        cnt = torch.tensor([xb.shape[0]])
        buf = torch.zeros(1, dtype=torch.long)
        dist.recv(buf, src=(rank - 1) % world)
        dist.send(cnt, dst=(rank + 1) % world)

    if args.fault == "sendrecv_size" and step == args.step:
        if rank == 0:
            payload = torch.randn(4, 33)     # sender packs 33 columns
            dist.send(payload, dst=1)
        elif rank == 1:
            buf = torch.empty(4, 32)          # receiver expects 32
            dist.recv(buf, src=0)
            say(f"received payload {buf.shape}")

    if args.fault == "bcast_obj" and step == args.step:
        cfg = [RunConfig() if rank == 0 else None]
        say("broadcasting run config")
        dist.broadcast_object_list(cfg, src=0)
        say(f"got config lr={cfg[0].lr}")

    if args.fault == "gather_obj_huge" and step == args.step:
        # each rank ships its full per-sample activation cache for "analysis"
        cache = {"acts": [torch.randn(256, 1024).numpy() for _ in range(args.cache_batches)]}
        out = [None] * world
        say("all_gather_object of activation cache")
        dist.all_gather_object(out, cache)
        say("gathered")

    if args.fault == "monitored" and step == args.step:
        if rank == args.rank:
            say("writing eval predictions before barrier")
            t0 = time.time()
            s = 0.0
            while time.time() - t0 < 3 * args.timeout:
                s += float(torch.randn(200, 200).sum())  # slow python-side eval loop
        dist.monitored_barrier(timeout=timedelta(seconds=max(5, args.timeout // 2)))

dist.barrier()
say("training done")
dist.destroy_process_group()
