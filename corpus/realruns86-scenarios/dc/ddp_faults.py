"""Small DDP classifier training used for the dc scenarios.

Usage:
  python ddp_faults.py prep --data DIR [--shards N] [--fault-shard R --shard-bug KIND]
  torchrun ... ddp_faults.py train --data DIR [options]
  python ddp_faults.py spawn --nprocs N --data DIR [options]   (torch.multiprocessing.spawn)

The faults live in the data/checkpoint/config the run is given, not in the code path:
prep writes per-rank shards, and --shard-bug injects a realistic defect into one shard.
"""
import argparse
import json
import logging
import os
import sqlite3
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset

N_FEAT = 32
N_CLASSES = 10


# ----------------------------------------------------------------------------- prep
def prep(args):
    os.makedirs(args.data, exist_ok=True)
    g = torch.Generator().manual_seed(0)
    w_true = torch.randn(N_FEAT, N_CLASSES, generator=g)
    for r in range(args.shards):
        n = 256
        x = torch.randn(n, N_FEAT, generator=g)
        y = (x @ w_true).argmax(1)
        meta = [{"id": f"s{r}-{i}", "src": ["wiki", "books3", "github"][i % 3], "domain": ["web", "books", "code"][i % 3], "len": 32} for i in range(n)]
        aux = (torch.rand(n, generator=g) > 0.5).long()
        bug = args.shard_bug if r == args.fault_shard else None
        if bug == "column-labels":
            # this shard was exported with labels as an (N, 1) column
            y = y.unsqueeze(1)
        elif bug == "float64-features":
            # this shard went through the pandas exporter, which keeps float64
            x = x.double()
        elif bug == "one-based-labels":
            # this shard came from the legacy exporter that writes labels 1..10
            y = y + 1
        elif bug == "extra-column":
            # exporter appended the sample weight as an extra feature column
            x = torch.cat([x, torch.ones(n, 1)], 1)
        elif bug == "missing-class":
            keep = y != 7
            x, y, aux = x[keep], y[keep], aux[keep]
            meta = [m for m, k in zip(meta, keep.tolist()) if k]
        elif bug == "no-aux":
            aux = torch.full((len(y),), -1)  # aux annotations absent for this source
        elif bug == "meta-without-domain":
            for m in meta[100:]:
                m.pop("domain")
        elif bug == "long-outlier":
            meta[37]["len"] = 2_000_000  # one scraped document never got truncated
        elif bug == "many-files":
            pass
        elif bug == "per-doc-sources":
            # crawl shard: every document carries its own source name
            for m in meta:
                m["src"] = "cc-" + m["id"].replace("-", "_") + "-en"
        torch.save({"x": x, "y": y, "aux": aux, "meta": meta}, os.path.join(args.data, f"shard_{r:02d}.pt"))
        # per-sample feature cache files (used by --feature-cache)
        nfiles = 16 if bug != "many-files" else 600
        cdir = os.path.join(args.data, f"cache_{r:02d}")
        os.makedirs(cdir, exist_ok=True)
        for i in range(nfiles):
            np.save(os.path.join(cdir, f"part{i:04d}.npy"), np.random.rand(4, N_FEAT).astype("float32"))
    print(f"prepared {args.shards} shards in {args.data}")


# ----------------------------------------------------------------------------- model/data
class Net(nn.Module):
    def __init__(self, in_features=N_FEAT, hidden=64, layers=2, aux_head=False):
        super().__init__()
        mods = [nn.Linear(in_features, hidden), nn.ReLU()]
        for _ in range(layers - 1):
            mods += [nn.Linear(hidden, hidden), nn.ReLU()]
        self.body = nn.Sequential(*mods)
        self.head = nn.Linear(hidden, N_CLASSES)
        self.aux = nn.Linear(hidden, 2) if aux_head else None

    def forward(self, x, aux_y=None):
        h = self.body(x)
        out = self.head(h)
        if self.aux is not None and aux_y is not None and (aux_y >= 0).any():
            return out, self.aux(h)
        return out, None


class ShardDataset(Dataset):
    def __init__(self, shard, transform_meta=False):
        self.x, self.y, self.aux, self.meta = shard["x"], shard["y"], shard["aux"], shard["meta"]
        self.transform_meta = transform_meta

    def __len__(self):
        return len(self.y)

    def __getitem__(self, i):
        item = {"x": self.x[i], "y": self.y[i], "aux": self.aux[i]}
        if self.transform_meta:
            m = self.meta[i]
            item["domain_id"] = ["web", "books", "code"].index(m["domain"])
        return item


class FeatureCache:
    """Keeps the per-part memory-mapped feature files open for fast random access."""

    def __init__(self, cdir):
        self.handles = []
        for f in sorted(os.listdir(cdir)):
            fh = open(os.path.join(cdir, f), "rb")
            self.handles.append(fh)
            # np.load(mmap) keeps its own descriptor as well
            self.handles.append(np.load(os.path.join(cdir, f), mmap_mode="r"))

    def __len__(self):
        return len(self.handles)


# ----------------------------------------------------------------------------- helpers
def setup_logging(args, rank):
    handlers = []
    fmt = "%(asctime)s %(levelname)s [rank%(rank)s] %(name)s: %(message)s"
    if args.rank_logs:
        os.makedirs(args.rank_logs, exist_ok=True)
        handlers.append(logging.FileHandler(os.path.join(args.rank_logs, f"rank_{rank}.log"), mode="w"))
    if args.logging:
        handlers.append(logging.StreamHandler(sys.stderr))
    log = logging.getLogger("train")
    log.setLevel(logging.INFO)
    for h in handlers:
        h.setFormatter(logging.Formatter(fmt))
        log.addHandler(h)
    return logging.LoggerAdapter(log, {"rank": rank})


def emit(args, log, msg, rank):
    """stdout for progress lines (buffered unless --flush), plus the logger if configured."""
    if args.print_progress:
        print(f"[rank{rank}] {msg}", flush=args.flush)
    if log.logger.handlers:
        log.info(msg)


def wait_for_lock(path, log):
    # simple cross-process lock around cache building (a stale lock from a crashed job never goes away)
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            os.close(fd)
            return
        except FileExistsError:
            time.sleep(0.5)


# ----------------------------------------------------------------------------- train
def train(args, rank=None, world=None):
    if args.catch_print:
        # "friendly" error handling: report the crash on stdout, clean up the process group, exit 1
        import traceback
        try:
            _train(args, rank, world)
        except Exception:
            r = dist.get_rank() if dist.is_initialized() else "?"
            print(f"[rank{r}] FATAL: training crashed, see traceback below", flush=False)
            traceback.print_exc(file=sys.stdout)
            if dist.is_initialized():
                dist.destroy_process_group()
            sys.exit(1)
        return
    try:
        _train(args, rank, world)
    except BaseException:
        log = logging.getLogger("train")
        if log.handlers:
            logging.LoggerAdapter(log, {"rank": dist.get_rank() if dist.is_initialized() else "?"}).exception(
                "training failed")
        raise


def _train(args, rank=None, world=None):
    if rank is None:
        dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
    else:
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", str(args.port))
        dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=args.pg_timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(1234 + rank)
    log = setup_logging(args, rank)
    emit(args, log, f"init done: world_size={world} backend={dist.get_backend()} pid={os.getpid()}", rank)

    if args.noise:
        warnings.warn("torch.distributed: NCCL is not available in this build, falling back to gloo for all collectives; "
                      "performance may be severely degraded", UserWarning)
        arr = np.frombuffer(np.arange(4, dtype=np.float32).tobytes(), dtype=np.float32)
        torch.from_numpy(arr)  # non-writable numpy array warning, harmless

    if args.optional_stats:
        try:
            with open(args.optional_stats.format(rank=rank)) as f:
                norm_stats = json.load(f)
        except Exception:
            log.exception("could not read normalisation stats, continuing with defaults (mean=0, std=1)")

    shard_path = os.path.join(args.data, f"shard_{rank:02d}.pt")
    emit(args, log, f"loading shard {shard_path}", rank)
    shard = torch.load(shard_path)
    ds = ShardDataset(shard, transform_meta=args.domain_stats)
    in_features = ds.x.shape[1]  # infer input width from the data
    model = Net(in_features=in_features, hidden=args.hidden, layers=args.layers, aux_head=args.aux_head)

    if args.feature_cache:
        fc = FeatureCache(os.path.join(args.data, f"cache_{rank:02d}"))
        emit(args, log, f"feature cache: {len(fc)} open handles", rank)

    if args.resume:
        mp_ = os.path.join(args.resume, "model.pt")
        emit(args, log, f"resuming model from {mp_}", rank)
        model.load_state_dict(torch.load(mp_, map_location="cpu"))

    ddp = DDP(model, find_unused_parameters=args.find_unused)
    opt = torch.optim.AdamW(ddp.parameters(), lr=args.lr)
    if args.resume:
        op = os.path.join(args.resume, f"optim_rank{rank}.pt")
        emit(args, log, f"resuming optimizer from {op}", rank)
        opt.load_state_dict(torch.load(op, map_location="cpu"))
    sched = torch.optim.lr_scheduler.StepLR(opt, 5, 0.9)
    if args.noise:
        sched.step()  # the classic "lr_scheduler.step() before optimizer.step()" warning

    dl = DataLoader(ds, batch_size=args.bs, shuffle=True, num_workers=args.workers, drop_last=True)

    if args.attn_buffer:
        max_len = max(m["len"] for m in ds.meta)
        emit(args, log, f"allocating attention bias buffer for max_len={max_len}", rank)
        attn_bias = torch.zeros(max_len, max_len)  # noqa

    metrics_fh = None
    if args.metrics_dir:
        os.makedirs(args.metrics_dir, exist_ok=True)
        metrics_fh = open(os.path.join(args.metrics_dir, f"metrics_rank{rank}.jsonl"), "a")

    db = None
    if args.sqlite:
        db = sqlite3.connect(args.sqlite, timeout=args.sqlite_timeout)
        db.execute("CREATE TABLE IF NOT EXISTS metrics (rank INT, step INT, loss REAL)")
        db.commit()

    it = range(args.steps)
    pbar = None
    if args.tqdm:
        from tqdm import tqdm
        pbar = tqdm(total=args.steps, desc=f"rank{rank}", position=rank, dynamic_ncols=False, ncols=90)

    step = 0
    t0 = time.time()
    dliter = iter(dl)
    for step in it:
        try:
            batch = next(dliter)
        except StopIteration:
            dliter = iter(dl)
            batch = next(dliter)
        x, y, aux_y = batch["x"], batch["y"], batch["aux"]
        logits, aux_logits = ddp(x, aux_y)
        loss = F.cross_entropy(logits, y)
        if aux_logits is not None:
            loss = loss + 0.1 * F.cross_entropy(aux_logits, aux_y.clamp(min=0))
        opt.zero_grad()
        loss.backward()
        if args.noise and step == 1:
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        opt.step()
        sched.step()

        if args.class_hist and step % 3 == 2:
            # per-class accuracy bookkeeping: one bucket per class present in the shard
            classes = torch.unique(ds.y)
            hist = torch.zeros(len(classes))
            pred = logits.argmax(1)
            for j, c in enumerate(classes):
                hist[j] = ((pred == c) & (y == c)).sum()
            dist.all_reduce(hist)
            emit(args, log, f"step {step} class-hist {hist.tolist()[:4]}...", rank)

        if args.domain_stats and step % 4 == 3:
            counts = {"web": 0, "books": 0, "code": 0}
            for i in range(len(ds.meta)):
                counts[ds.meta[i]["domain"]] += 1
            emit(args, log, f"step {step} domain mix {counts}", rank)

        lt = loss.detach().clone()
        dist.all_reduce(lt)
        lt /= world
        if step % args.log_every == 0 or step == args.steps - 1:
            emit(args, log, f"step {step}/{args.steps} loss {loss.item():.4f} avg_loss {lt.item():.4f} "
                 f"lr {sched.get_last_lr()[0]:.2e} {((time.time()-t0)/(step+1))*1000:.0f}ms/it", rank)
        if metrics_fh:
            metrics_fh.write(json.dumps({"step": step, "loss": loss.item()}) + "\n")
            metrics_fh.flush()
        if db is not None:
            if rank == 0 and step == 0:
                # rank 0 writes a long summary transaction (holds the write lock)
                db.execute("BEGIN EXCLUSIVE")
                for k in range(2000):
                    db.execute("INSERT INTO metrics VALUES (?,?,?)", (rank, -k, 0.0))
                time.sleep(args.sqlite_hold)
                db.commit()
            else:
                db.execute("INSERT INTO metrics VALUES (?,?,?)", (rank, step, loss.item()))
                db.commit()
        if args.slow_rank is not None and rank == args.slow_rank:
            time.sleep(args.slow_s)
        if pbar:
            pbar.update(1)
            pbar.set_postfix(loss=f"{loss.item():.3f}")

        if args.save_every and (step + 1) % args.save_every == 0:
            save_ckpt(args, ddp, opt, rank, step, log, ds)
        if args.eval_every and (step + 1) % args.eval_every == 0:
            evaluate(args, ddp, rank, world, step, log)

    if pbar:
        pbar.close()
    dist.barrier()
    emit(args, log, f"training finished: {args.steps} steps in {time.time()-t0:.1f}s", rank)
    dist.destroy_process_group()


def save_ckpt(args, ddp, opt, rank, step, log, ds):
    os.makedirs(args.ckpt_dir, exist_ok=True)
    if rank == 0:
        torch.save(ddp.module.state_dict(), os.path.join(args.ckpt_dir, "model.pt"))
    torch.save(opt.state_dict(), os.path.join(args.ckpt_dir, f"optim_rank{rank}.pt"))
    if args.save_cache:
        # each rank also dumps its feature cache so a restart does not recompute it
        n = args.cache_rows * (4 if rank == args.big_cache_rank else 1)
        feats = np.random.rand(n, N_FEAT).astype("float32")
        if args.cache_format == "npy":
            np.save(os.path.join(args.ckpt_dir, f"features_rank{rank}_step{step+1}.npy"), feats)
        else:
            import pickle
            with open(os.path.join(args.ckpt_dir, f"features_rank{rank}_step{step+1}.pkl"), "wb") as f:
                pickle.dump({"step": step + 1, "features": feats}, f)
    if args.tag_outputs:
        # eval dump named after the data sources this rank trained on
        srcs = sorted({m.get("src", "mix") for m in ds.meta})
        fname = "preds__" + "+".join(srcs) + f"__step{step+1}.json"
        with open(os.path.join(args.ckpt_dir, fname), "w") as f:
            json.dump({"step": step}, f)
    emit(args, log, f"saved checkpoint for step {step+1} to {args.ckpt_dir}", rank)


def evaluate(args, ddp, rank, world, step, log):
    if args.eval_lock:
        # build the eval cache under a file lock
        lock = os.path.join(args.eval_lock, f"evalcache_rank{rank}.lock")
        wait_for_lock(lock, log)
        os.remove(lock)
    if args.monitored_barrier:
        dist.monitored_barrier(timeout=timedelta(seconds=args.mb_timeout), wait_all_ranks=True)
    else:
        dist.barrier()
    emit(args, log, f"eval after step {step+1}: ok", rank)


def build_parser():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["prep", "train", "spawn"])
    p.add_argument("--data", required=True)
    p.add_argument("--shards", type=int, default=4)
    p.add_argument("--fault-shard", type=int, default=-1)
    p.add_argument("--shard-bug", default=None)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--bs", type=int, default=16)
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--aux-head", action="store_true")
    p.add_argument("--find-unused", action="store_true")
    p.add_argument("--workers", type=int, default=0)
    p.add_argument("--log-every", type=int, default=5)
    p.add_argument("--flush", action="store_true")
    p.add_argument("--print-progress", action="store_true", default=True)
    p.add_argument("--no-print", dest="print_progress", action="store_false")
    p.add_argument("--logging", action="store_true")
    p.add_argument("--rank-logs", default=None)
    p.add_argument("--tqdm", action="store_true")
    p.add_argument("--noise", action="store_true")
    p.add_argument("--pg-timeout", type=int, default=30)
    p.add_argument("--resume", default=None)
    p.add_argument("--class-hist", action="store_true")
    p.add_argument("--domain-stats", action="store_true")
    p.add_argument("--feature-cache", action="store_true")
    p.add_argument("--attn-buffer", action="store_true")
    p.add_argument("--metrics-dir", default=None)
    p.add_argument("--sqlite", default=None)
    p.add_argument("--sqlite-timeout", type=float, default=2.0)
    p.add_argument("--sqlite-hold", type=float, default=6.0)
    p.add_argument("--slow-rank", type=int, default=None)
    p.add_argument("--slow-s", type=float, default=0.0)
    p.add_argument("--save-every", type=int, default=0)
    p.add_argument("--ckpt-dir", default="ckpt")
    p.add_argument("--save-cache", action="store_true")
    p.add_argument("--cache-rows", type=int, default=1000)
    p.add_argument("--cache-format", default="npy", choices=["npy", "pickle"])
    p.add_argument("--big-cache-rank", type=int, default=-1)
    p.add_argument("--tag-outputs", action="store_true")
    p.add_argument("--eval-every", type=int, default=0)
    p.add_argument("--eval-lock", default=None)
    p.add_argument("--monitored-barrier", action="store_true")
    p.add_argument("--mb-timeout", type=int, default=15)
    p.add_argument("--catch-print", action="store_true")
    p.add_argument("--optional-stats", default=None)
    p.add_argument("--nprocs", type=int, default=2)
    p.add_argument("--port", type=int, default=37650)
    return p


def _spawn_entry(rank, args, world):
    train(args, rank, world)


if __name__ == "__main__":
    args = build_parser().parse_args()
    if args.mode == "prep":
        prep(args)
    elif args.mode == "train":
        train(args)
    else:
        import torch.multiprocessing as mp
        mp.spawn(_spawn_entry, args=(args, args.nprocs), nprocs=args.nprocs, join=True)
