"""Small DDP trainer used for two-'node' torchrun jobs on one machine (gloo, CPU).

Data: per-node preprocessed shards in --data-dir (shard_*.pt with 'x' features and 'y' labels),
optional token shards (--tokens) for the embedding model.  Faults are not injected by raising
exceptions: they come from the arguments / environment each node is started with, or from the
small bugs selected by --bug on the rank that runs the affected code path.
"""
import argparse
import ctypes
import json
import logging
import math
import os
import sqlite3
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="/work/rr81/cl/work/data")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--feat", type=int, default=32)
p.add_argument("--classes", type=int, default=4)
p.add_argument("--vocab", type=int, default=0, help="embedding model with this vocab (0 = dense model)")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--log-every", type=int, default=5)
p.add_argument("--eval-every", type=int, default=0)
p.add_argument("--eval-rank", type=int, default=-1)
p.add_argument("--ckpt-dir", default="")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--resume", default="")
p.add_argument("--resume-weights-only", default="default")
p.add_argument("--style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--noise", action="store_true", help="emit the usual harmless warnings")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--use-aux", action="store_true")
p.add_argument("--bug", default="", help="code path with a latent bug: evalkey|native|leakfd|lock|bigeval|sqlite|metricsjson")
p.add_argument("--bug-rank", type=int, default=-1)
p.add_argument("--bug-step", type=int, default=10)
p.add_argument("--config", default="")
p.add_argument("--monitored", action="store_true")
p.add_argument("--step-sleep", type=float, default=0.2)
args = p.parse_args()

if args.style == "logging":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")


def out(msg):
    if args.style == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
local_rank = int(os.environ.get("LOCAL_RANK", 0))
torch.manual_seed(0)
torch.set_num_threads(1)
out(f"[rank{rank}] init done: world_size={world} local_rank={local_rank} host_pid={os.getpid()}")

if args.config:
    with open(args.config) as f:
        cfg = json.load(f)
    for k, v in cfg.items():
        setattr(args, k.replace("-", "_"), v)
    out(f"[rank{rank}] loaded config {args.config}: {cfg}")


class DenseNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(args.feat, args.hidden)
        self.fc2 = nn.Linear(args.hidden, args.hidden)
        self.head = nn.Linear(args.hidden, args.classes)
        self.aux = nn.Linear(args.hidden, 1)  # auxiliary head, only used when --aux is set upstream

    def forward(self, x):
        h = F.relu(self.fc1(x))
        h = F.relu(self.fc2(h))
        if args.use_aux:
            return self.head(h) + 0.0 * self.aux(h)
        return self.head(h)


class TokNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(args.vocab, args.hidden)
        self.fc = nn.Linear(args.hidden, args.hidden)
        self.head = nn.Linear(args.hidden, args.classes)

    def forward(self, ids):
        h = self.emb(ids).mean(1)
        return self.head(F.relu(self.fc(h)))


model = TokNet() if args.vocab else DenseNet()
ddp = DDP(model, find_unused_parameters=args.find_unused)
opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5)
start = 0

if args.resume:
    kw = {} if args.resume_weights_only == "default" else {"weights_only": args.resume_weights_only == "1"}
    out(f"[rank{rank}] resuming from {args.resume}")
    ck = torch.load(args.resume, map_location="cpu", **kw)
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optim"])
    start = ck.get("step", 0)
    out(f"[rank{rank}] resumed at step {start}")

# ---- data: node-local preprocessed shard ----
shard_name = "tokens.pt" if args.vocab else "shard.pt"
shard_path = os.path.join(args.data_dir, shard_name)
out(f"[rank{rank}] loading {shard_path}")
data = torch.load(shard_path)
X, Y = data["x"], data["y"]
out(f"[rank{rank}] {len(Y)} samples, x{tuple(X.shape[1:])}")
g = torch.Generator().manual_seed(rank)
open_shards = []

it = range(start, args.steps)
if args.style == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90)

for step in it:
    idx = torch.randint(0, len(Y), (args.batch,), generator=g)
    x, y = X[idx], Y[idx]
    if args.bug == "leakfd" and rank == args.bug_rank:
        # re-open the index file every step to read the sample offsets (never closed)
        f = open(os.path.join(args.data_dir, "index.json"))
        open_shards.append(f)
        json.load(f)
        f.seek(0)
    if args.bug == "native" and rank == args.bug_rank and step == args.bug_step:
        # fast-path CRC via libc on the batch buffer; pointer from a freed buffer (bug)
        ptr = ctypes.c_void_p(0x10)
        ctypes.string_at(ptr, 64)
    if args.bug == "lock" and rank == args.bug_rank and step == args.bug_step:
        lock = os.path.join(args.data_dir, "refresh.lock")
        out(f"[rank{rank}] step {step}: waiting for data refresh lock {lock}")
        while os.path.exists(lock):
            time.sleep(1)
    if args.monitored and step == args.bug_step:
        dist.monitored_barrier(timeout=timedelta(seconds=15), wait_all_ranks=True)
    logits = ddp(x)
    if args.noise:
        y = torch.tensor(y)
        loss = F.cross_entropy(logits, y, size_average=True)
    else:
        loss = F.cross_entropy(logits, y)
    lv = loss.item()
    if not math.isfinite(lv):
        print(f"Loss is {lv}, stopping training", flush=True)
        print({"step": step, "rank": rank, "lr": sched.get_last_lr()[0]}, flush=True)
        sys.exit(1)
    opt.zero_grad()
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % args.log_every == 0:
        t = torch.tensor([lv])
        dist.all_reduce(t)
        if rank == 0:
            msg = f"step {step:4d} | loss {t.item() / world:.4f} | grad_norm {gn.item():.3f} | lr {sched.get_last_lr()[0]:.4f}"
            if args.style == "tqdm":
                it.write(msg)
            else:
                out(msg)
    if args.eval_every and step and step % args.eval_every == 0 and rank == args.eval_rank:
        with torch.no_grad():
            eb = 16 if args.bug != "bigeval" else 1 << 27
            ex = torch.randn(eb, args.feat)
            pred = model(ex).argmax(-1)
            metrics = {"eval_acc": (pred == 0).float().mean().item(), "eval_n": eb}
            out(f"[rank{rank}] eval step {step}: acc={metrics['eval_acc']:.3f}")
            if args.bug == "evalkey":
                out(f"[rank{rank}] best so far: {max(metrics['acc'], 0):.3f}")
    if args.bug == "sqlite" and rank == args.bug_rank and step == args.bug_step:
        db = sqlite3.connect(os.path.join(args.ckpt_dir, "runs.db"), timeout=2)
        db.execute("create table if not exists metrics(step int, rank int, loss real)")
        db.execute("insert into metrics values (?,?,?)", (step, rank, lv))
        db.commit()
    if args.ckpt_every and step and step % args.ckpt_every == 0:
        os.makedirs(args.ckpt_dir, exist_ok=True)
        path = os.path.join(args.ckpt_dir, f"node{os.environ.get('GROUP_RANK', '0')}-rank{rank}-step{step}.pt")
        with open(path, "wb") as f:
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "step": step}, f)
        with open(path + ".json", "w") as f:
            json.dump({"step": step, "loss": lv, "rank": rank}, f)
        out(f"[rank{rank}] saved {path}")
    time.sleep(args.step_sleep)

dist.barrier()
out(f"[rank{rank}] training finished")
dist.destroy_process_group()
