#!/usr/bin/env python
"""Layered DDP training job (tiny MLP classifier on synthetic 'shards').

Launched by torchrun (usually under scenarios/run_with_retries.sh or the Makefile).
--fault selects a bug / misconfiguration that is exercised at --fault-step on --fault-rank.
The wrapper exports ATTEMPT; --faults-by-attempt "1=a,2=b" overrides --fault per attempt.
"""
import argparse
import ctypes
import datetime
import fcntl
import json
import logging
import math
import os
import sqlite3
import subprocess
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset, DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--faults-by-attempt", default="")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=500)
p.add_argument("--steps", type=int, default=1000)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--chatty", type=int, default=3, help="extra debug lines per step")
p.add_argument("--log-every", type=int, default=1)
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--ckpt-dir", default="/work/rr93/eg/tmp/ckpt")
p.add_argument("--ckpt-every", type=int, default=0)
p.add_argument("--resume", default="")
p.add_argument("--data-dir", default="/work/rr93/eg/tmp/data")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--lr-peak", type=float, default=0.0, help="lr after warmup (0 = same as --lr)")
p.add_argument("--warmup", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--dl-timeout", type=int, default=0)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--barrier-every", type=int, default=0)
p.add_argument("--metrics-db", default="")
p.add_argument("--warn", action="store_true", help="enable noisy-but-harmless warnings")
args = p.parse_args()

ATTEMPT = int(os.environ.get("ATTEMPT", "1"))
if args.faults_by_attempt:
    m = dict(kv.split("=") for kv in args.faults_by_attempt.split(","))
    args.fault = m.get(str(ATTEMPT), "none")

IN_DIM, N_CLASSES = 16, 10
CLASS_NAMES = [f"cls{i:02d}" for i in range(N_CLASSES)]
CLASS_TO_ID = {c: i for i, c in enumerate(CLASS_NAMES)}


class ShardDataset(Dataset):
    """Synthetic samples; each 'record' is generated deterministically from its index.
    Records are looked up in small shard files under data_dir (index files)."""

    def __init__(self, n, data_dir, bad_index=-1, fault="none"):
        self.n = n
        self.data_dir = data_dir
        self.bad_index = bad_index
        self.fault = fault
        self._handles = []  # cache of open shard handles (see fault 'fd_leak')

    def __len__(self):
        return self.n

    def _record(self, idx):
        g = torch.Generator().manual_seed(idx)
        x = torch.randn(IN_DIM, generator=g)
        label = CLASS_NAMES[idx % N_CLASSES]
        if idx == self.bad_index and self.fault == "worker_keyerror":
            # upstream relabelling produced a class name the class map does not know
            label = "cls10-unlabelled"
        if idx == self.bad_index and self.fault == "collate":
            # record from the v2 export has one extra engineered feature
            x = torch.cat([x, torch.tensor([float(idx % 7)])])
        return x, label

    def __getitem__(self, idx):
        if self.fault == "fd_leak":
            shard = os.path.join(self.data_dir, f"shard-{idx % 64:03d}.idx")
            fh = open(shard, "rb")
            fh.seek(0)
            self._handles.append(fh)  # keep shard handle cached for later seeks
        if idx == self.bad_index and self.fault == "worker_kill":
            with open(os.environ.get("KILL_PIDFILE", "/work/rr93/eg/tmp/dl_worker.pid"), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(30)
        if idx == self.bad_index and self.fault == "dl_fifo":
            # index lookup goes through a named pipe served by a sidecar that is not running
            with open(os.path.join(self.data_dir, "lookup.fifo"), "rb") as f:
                f.read(8)
        x, label = self._record(idx)
        return x, CLASS_TO_ID[label]


class Net(nn.Module):
    def __init__(self, hidden, aux=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(IN_DIM, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, N_CLASSES)
        self.aux_head = nn.Linear(hidden, N_CLASSES) if aux else None

    def forward(self, x, use_aux=False):
        h = self.body(x)
        out = self.head(h)
        if self.aux_head is not None and use_aux:
            out = out + 0.1 * self.aux_head(h)
        return out


def setup_logging(rank):
    if args.log_style == "logging":
        logging.basicConfig(
            level=logging.INFO,
            format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s",
            stream=sys.stdout,
        )
        log = logging.getLogger("train")
        return log.info, log.warning, log.debug
    def info(msg):
        print(f"[rank{rank}] {msg}", flush=True)
    return info, info, info


def main():
    rank = int(os.environ.get("RANK", "0"))
    world = int(os.environ.get("WORLD_SIZE", "1"))
    info, warn, debug = setup_logging(rank)
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.pg_timeout))
    info(f"attempt={ATTEMPT} world_size={world} pid={os.getpid()} torch={torch.__version__}")
    torch.manual_seed(0)

    n = args.steps * args.bs * world + 64
    sampler = DistributedSampler(range(n), num_replicas=world, rank=rank, shuffle=False)
    local_indices = list(iter(sampler))
    bad_index = -1
    if rank == args.fault_rank and args.fault_step * args.bs < len(local_indices):
        bad_index = local_indices[args.fault_step * args.bs + 3]
    ds = ShardDataset(n, args.data_dir, bad_index=bad_index, fault=args.fault)
    dl = DataLoader(ds, batch_size=args.bs, sampler=DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=False),
                    num_workers=args.workers, timeout=args.dl_timeout,
                    persistent_workers=False)

    model = Net(args.hidden, aux=(args.fault == "unused_param"))
    if args.fault == "model_mismatch" and rank == args.fault_rank:
        model = Net(args.hidden + 16)
    if args.resume:
        info(f"resuming from {args.resume}")
        sd = torch.load(args.resume, map_location="cpu")
        model.load_state_dict(sd["model"])
        info(f"resumed at step {sd['step']}")
    ddp = DDP(model)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9)

    db = None
    if args.metrics_db:
        db = sqlite3.connect(args.metrics_db, timeout=0.5)
        if rank == 0:
            db.execute("CREATE TABLE IF NOT EXISTS metrics (attempt INT, rank INT, step INT, loss REAL)")
            db.commit()
        dist.barrier()

    if args.warn:
        warnings.warn("torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly", UserWarning)
        if rank == 0:
            info("WARNING: found stale lock /work/rr93/eg/tmp/ckpt/.lock from a previous attempt, ignoring it")

    it = iter(dl)
    pbar = None
    if args.log_style == "tqdm" and rank == 0:
        from tqdm import tqdm
        pbar = tqdm(total=args.steps, desc=f"train (attempt {ATTEMPT})", mininterval=0.5, file=sys.stderr)
    t0 = time.time()
    running = None
    for step in range(args.steps):
        try:
            x, y = next(it)
        except StopIteration:
            it = iter(dl)
            x, y = next(it)
        lr = args.lr
        if args.warmup and step >= args.warmup:
            lr = args.lr_peak or args.lr
        for g in opt.param_groups:
            g["lr"] = lr
        use_aux = args.fault == "unused_param" and step < args.fault_step
        logits = ddp(x, use_aux=use_aux)
        loss = F.cross_entropy(logits, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        here = rank == args.fault_rank and step == args.fault_step
        if args.fault == "backward_twice" and here:
            # "re-use the graph for a regulariser" - graph buffers already freed
            reg = 1e-3 * logits.pow(2).mean()
            (loss + reg).backward()
        opt.step()

        if not math.isfinite(loss.item()):
            raise FloatingPointError(f"Loss is {loss.item()} at step {step} (lr={lr}); stopping training")

        if args.fault == "collective_mismatch" and step == args.fault_step:
            # per-class hit counts for the metrics line, but only over classes present in this batch
            present = torch.unique(y)
            counts = torch.stack([(y == c).sum() for c in present]).float()
            if rank == args.fault_rank:
                counts = counts[:-1]  # drop padding class
            dist.all_reduce(counts)
        if args.fault == "segv" and here:
            # native fast-path for the metric (bad pointer passed from Python)
            ctypes.string_at(0)
        if args.fault == "cpu_oom" and here:
            info("computing pairwise embedding distances for retrieval metric")
            emb = torch.empty(n, args.hidden)
            d = torch.empty(n * 40, n)  # distances to all candidates (x40 hard negatives)
            d.zero_()
        if args.fault == "hang" and here:
            info("acquiring dataset refresh lock /work/rr93/eg/tmp/refresh.lock")
            with open("/work/rr93/eg/tmp/refresh.lock", "w") as lf:
                fcntl.flock(lf, fcntl.LOCK_EX)  # wait for refresher to finish
        if args.fault == "subprocess_eval" and step == args.fault_step and rank == 0:
            info("running eval hook: scenarios/eval_hook.py")
            subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "eval_hook.py"),
                            "--step", str(step), "--split", "heldout"], check=True)
        if db is not None and step % 5 == 0:
            if rank == 0 and step == args.fault_step and args.fault == "sqlite_lock":
                info("compacting metrics db")
                db.execute("BEGIN EXCLUSIVE")
                db.execute("INSERT INTO metrics VALUES (?,?,?,?)", (ATTEMPT, rank, step, loss.item()))
                time.sleep(3)
                db.commit()
            else:
                db.execute("INSERT INTO metrics VALUES (?,?,?,?)", (ATTEMPT, rank, step, loss.item()))
                db.commit()
        if args.barrier_every and step % args.barrier_every == 0 and step > 0:
            dist.monitored_barrier(timeout=datetime.timedelta(seconds=15), wait_all_ranks=True)

        if step % args.log_every == 0:
            elapsed = time.time() - t0
            if pbar is None:
                info(f"step {step}/{args.steps} loss={loss.item():.4f} lr={lr:.4g} "
                     f"samples/s={(step + 1) * args.bs / max(elapsed, 1e-6):.1f}")
            for k in range(args.chatty):
                debug(f"  data: step={step} worker_batch={k} fetched={x.shape[0]} shard={(step * 7 + k) % 64:03d} "
                      f"queue_depth={(step + k) % 4} grad_norm={sum(p.grad.norm().item() for p in model.parameters() if p.grad is not None):.4f}")
        if pbar is not None:
            pbar.update(1)
            pbar.set_postfix(loss=f"{loss.item():.3f}")

        if args.ckpt_every and step > 0 and step % args.ckpt_every == 0 and rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            path = os.path.join(args.ckpt_dir, f"step{step:06d}.pt")
            with open(path, "wb") as fh: torch.save({"model": ddp.state_dict(), "opt": opt.state_dict(), "step": step,
                                                    "pad": torch.zeros(200_000)}, fh)
            info(f"saved checkpoint {path}")
    if pbar is not None:
        pbar.close()
    info(f"training finished: {args.steps} steps in {time.time() - t0:.1f}s final loss={loss.item():.4f}")
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
