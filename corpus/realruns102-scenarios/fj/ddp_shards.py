"""Sharded-data DDP trainer (tabular classifier) used for the rr102/fj runs.

Each rank reads its own JSONL shard  <data_dir>/shard-000NN.jsonl  and trains a small MLP
under DistributedDataParallel (gloo, CPU).  --fault selects a failure that is induced on
--fault-rank at --fault-step.
"""
import argparse
import fcntl
import json
import logging
import math
import os
import random
import resource
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="data/shards")
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--log-every", type=int, default=1)
p.add_argument("--eval-every", type=int, default=10)
p.add_argument("--save-every", type=int, default=0)
p.add_argument("--resume", default="")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--style", choices=["logging", "print", "tqdm"], default="logging")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--mem-limit-mb", type=int, default=0)
p.add_argument("--eval-passes", type=int, default=400, help="MC-dropout passes for the full validation")
p.add_argument("--find-unused", action="store_true")
p.add_argument("--monitored-barrier", action="store_true")
p.add_argument("--noise", action="store_true", help="print the usual warnings")
p.add_argument("--run-name", default="mlp-sharded")
args = p.parse_args()

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
local_rank = int(os.environ.get("LOCAL_RANK", 0))

logging.basicConfig(
    level=logging.INFO,
    format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s",
    stream=sys.stdout,
)
log = logging.getLogger("train")


def say(msg):
    if args.style == "logging":
        log.info(msg)
    else:
        print(f"[rank{rank}] {msg}", flush=True)


# ---------------------------------------------------------------- data
class JsonlShard(Dataset):
    """Lazily parsed JSONL shard: one record per line, {"x": [...], "y": int, "w": float}."""

    def __init__(self, path):
        self.path = path
        with open(path, "rb") as f:
            self.offsets = []
            off = 0
            for line in f:
                self.offsets.append(off)
                off += len(line)
        self._fh = None

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        if self._fh is None:
            self._fh = open(self.path, "rb")
        self._fh.seek(self.offsets[i])
        rec = json.loads(self._fh.readline())
        x = torch.tensor(rec["x"], dtype=torch.float32)
        return x, int(rec.get("cat", 0)), int(rec["y"]), float(rec.get("w", 1.0))


def build_vocab(shard_path):
    # categorical feature "cat" -> embedding; vocab built from the shard that this rank sees
    cats = set()
    with open(shard_path) as f:
        for line in f:
            try:
                cats.add(json.loads(line).get("cat", 0))
            except json.JSONDecodeError:
                pass
    return max(cats) + 1


class MLP(nn.Module):
    def __init__(self, d_in=16, d_hidden=64, n_cls=4, n_cat=8, aux=False):
        super().__init__()
        self.cat_emb = nn.Embedding(n_cat, 8)
        self.net = nn.Sequential(nn.Linear(d_in + 8, d_hidden), nn.GELU(), nn.Linear(d_hidden, d_hidden), nn.GELU())
        self.head = nn.Linear(d_hidden, n_cls)
        self.aux_head = nn.Linear(d_hidden, 1) if aux else None

    def forward(self, x, cat, use_aux=True):
        h = self.net(torch.cat([x, self.cat_emb(cat)], dim=-1))
        out = self.head(h)
        if self.aux_head is not None and use_aux:
            return out, self.aux_head(h).squeeze(-1)
        return out, None


def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    torch.manual_seed(0)
    say(f"initialized process group: backend=gloo rank={rank} world_size={world} timeout={args.pg_timeout}s")

    if args.fault == "oom" and rank == args.fault_rank:
        # this rank runs inside the per-task address-space limit of the site config
        lim = args.mem_limit_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
        say(f"RLIMIT_AS set to {args.mem_limit_mb} MiB for this task")

    shard = os.path.join(args.data_dir, f"shard-{rank:05d}.jsonl")
    ds = JsonlShard(shard)
    say(f"loaded shard {shard}: {len(ds)} records")

    n_cat = build_vocab(shard) if args.fault == "local-vocab" else 8
    aux = args.fault == "aux-head" or args.find_unused
    model = MLP(n_cat=n_cat, aux=aux)
    nparams = sum(p.numel() for p in model.parameters())
    say(f"model: MLP params={nparams:,} n_cat={n_cat}")
    ddp = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr, total_steps=args.steps + 1)
    if args.noise:
        sched.step()  # warmup tick (before optimizer.step -> torch warns)

    start_step = 0
    if args.resume:
        path = os.path.join(args.resume, f"rank{rank}", "optim.pt")
        say(f"resuming optimizer shard from {path}")
        state = torch.load(path, map_location="cpu")
        opt.load_state_dict(state["optim"])
        start_step = state["step"]
        say(f"resumed at step {start_step}")

    dl = DataLoader(ds, batch_size=args.batch_size, shuffle=True, num_workers=args.workers,
                    drop_last=True, persistent_workers=args.workers > 0)
    it = iter(dl)
    bar = None
    if args.style == "tqdm":
        from tqdm import tqdm
        bar = tqdm(total=args.steps, desc=f"rank{rank} train", initial=start_step, dynamic_ncols=False, ncols=100,
                   mininterval=0, file=sys.stderr)

    t0 = time.time()
    for step in range(start_step + 1, args.steps + 1):
        try:
            x, c, y, w = next(it)
        except StopIteration:
            it = iter(dl)
            x, c, y, w = next(it)
        if args.fault == "nan-exit" and rank == args.fault_rank and step >= args.fault_step:
            pass  # the shard already carries the bad rows (see make_data.py --inf-rows)
        use_aux = not (args.fault == "aux-head" and rank == args.fault_rank and step >= args.fault_step)
        logits, aux_out = ddp(x, c, use_aux=use_aux)
        loss = (F.cross_entropy(logits, y, reduction="none") * w).mean()
        if aux_out is not None:
            loss = loss + 0.1 * F.mse_loss(aux_out, y.float())
        if not math.isfinite(loss.item()):
            log.error(f"non-finite loss {loss.item()} at step {step}; aborting this worker (exit 3)")
            sys.exit(3)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        sched.step()

        if step % args.log_every == 0:
            msg = (f"step {step}/{args.steps} loss {loss.item():.4f} grad_norm {gn.item():.3f} "
                   f"lr {sched.get_last_lr()[0]:.2e} {args.batch_size * step / (time.time() - t0):.0f} samples/s")
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.4f}")
                if step % 5 == 0:
                    bar.write(f"[rank{rank}] {msg}", file=sys.stdout)
            else:
                say(msg)

        if args.fault == "oom" and rank == args.fault_rank and step == args.fault_step:
            pass
        if args.eval_every and step % args.eval_every == 0:
            evaluate(ddp, ds, step)

        if args.save_every and step % args.save_every == 0:
            save(opt, step)

    if bar is not None:
        bar.close()
    dist.barrier()
    say(f"training finished in {time.time() - t0:.1f}s")
    dist.destroy_process_group()


def evaluate(ddp, ds, step):
    ddp.eval()
    n_eval = 256
    if args.fault == "lock-wait" and rank == args.fault_rank:
        lock_path = os.path.join(args.data_dir, f".eval-cache-{rank:05d}.lock")
        say(f"eval: acquiring cache lock {lock_path}")
        fh = open(lock_path, "w")
        fcntl.flock(fh, fcntl.LOCK_EX)  # held by a stale preprocessing job
        say("eval: lock acquired")
    if args.fault == "slow-eval" and rank == args.fault_rank:
        n_eval = len(ds)  # "full" validation only on the logging rank
    with torch.no_grad():
        xs = torch.stack([ds[i][0] for i in range(n_eval)])
        cs = torch.tensor([ds[i][1] for i in range(n_eval)])
        ys = torch.tensor([ds[i][2] for i in range(n_eval)])
        if args.fault == "slow-eval" and rank == args.fault_rank:
            say(f"running full validation on {n_eval} records (rank {rank} only)")
            for _ in range(args.eval_passes):
                logits, _ = ddp.module(xs, cs)
        else:
            logits, _ = ddp.module(xs, cs)
        if args.fault == "oom" and rank == args.fault_rank:
            # embedding-similarity diagnostics over the eval features (n x n)
            feats = ddp.module.net(torch.cat([xs, ddp.module.cat_emb(cs)], -1).repeat(64, 1))
            sim = feats @ feats.T
            say(f"eval feature similarity mean {sim.mean().item():.4f}")
        acc = (logits.argmax(-1) == ys).float().mean()
    if args.monitored_barrier:
        dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)
    t = torch.tensor([acc.item(), 1.0])
    dist.all_reduce(t)
    say(f"eval @ step {step}: acc {t[0].item() / t[1].item():.4f}")
    ddp.train()


def save(opt, step):
    d = os.path.join(args.ckpt_dir, f"rank{rank}")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "optim.pt")
    torch.save({"optim": opt.state_dict(), "step": step}, path)
    say(f"saved optimizer shard -> {path}")
    dist.barrier()


if __name__ == "__main__":
    if args.noise:
        warnings.simplefilter("default")
    main()
