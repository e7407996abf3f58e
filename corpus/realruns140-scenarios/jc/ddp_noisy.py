"""Small DDP regression trainer with the usual real-world noise.

Flags select extra behaviour (healthy noise or a fault), the rank and the step.
"""
import argparse
import json
import pickle
import logging
import os
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
from torch.utils.data.distributed import DistributedSampler

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=60)
p.add_argument("--workdir", default="work/default")
p.add_argument("--ckpt-every", type=int, default=10)
p.add_argument("--resume", action="store_true")
p.add_argument("--ckpt-dir", default=None)
p.add_argument("--noise", default="", help="comma list: warnings,optional-import,cache-retry,bad-records,exit-ignored,unused-find,tqdm")
p.add_argument("--nan-at", type=int, default=-1, help="a constant feature column appears at this step (std=0 -> inf)")
p.add_argument("--nan-rank", type=int, default=1)
p.add_argument("--spike-at", type=int, default=-1)
p.add_argument("--fault", default="", help="metrics-key | stale-lock | many-shards")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=30)
p.add_argument("--lazy-workers", type=int, default=0, help="read records lazily in this many DataLoader workers")
p.add_argument("--stamp", action="store_true", help="python logging with timestamps")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--seconds-per-step", type=float, default=0.03)
args = p.parse_args()
noise = set(x for x in args.noise.split(",") if x)

dist_on = "RANK" in os.environ
if dist_on:
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

fmt = (f"%(asctime)s %(levelname)s [rank{rank}] %(name)s: %(message)s" if args.stamp
       else f"[rank{rank}] %(levelname)s %(message)s")
logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout)
log = logging.getLogger("trainer")
os.makedirs(args.workdir, exist_ok=True)

# ---- optimizer: prefer apex FusedAdam when present -------------------------
def make_optimizer(params):
    if "optional-import" in noise:
        try:
            from apex.optimizers import FusedAdam  # noqa: F401
            return FusedAdam(params, lr=args.lr)
        except ImportError:
            log.warning("apex not available, falling back to torch.optim.AdamW", exc_info=True)
    return torch.optim.AdamW(params, lr=args.lr)


# ---- data ------------------------------------------------------------------
def write_records(path, n=2048):
    g = torch.Generator().manual_seed(0)
    w = torch.randn(16, generator=g)
    with open(path, "w") as f:
        for i in range(n):
            x = torch.randn(16, generator=g)
            y = float(x @ w + 0.1 * torch.randn(1, generator=g))
            if "bad-records" in noise and i in (97, 1301, 1777):
                f.write('{"x": [0.1, 0.2, 0.3, "nan\n')  # truncated line from an interrupted export
                continue
            if "schema-drift" in noise and i >= 1500 and i % 97 == 0:
                f.write(json.dumps({"x": x.tolist(), "label": y, "src": "export-v2"}) + "\n")  # newer exporter
                continue
            f.write(json.dumps({"x": x.tolist(), "y": y}) + "\n")


class JsonlRegression(Dataset):
    def __init__(self, path):
        self.rows = []
        with open(path) as f:
            for lineno, line in enumerate(f, 1):
                try:
                    r = json.loads(line)
                    self.rows.append((torch.tensor(r["x"]), torch.tensor([r["y"]])))
                except json.JSONDecodeError:
                    log.exception("skipping malformed record at %s:%d", path, lineno)
        log.info("loaded %d records from %s", len(self.rows), path)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        return self.rows[i]


class LazyJsonl(Dataset):
    """Keeps only line offsets; parses each record in the DataLoader worker."""
    def __init__(self, path):
        self.path, self.offsets = path, []
        with open(path, "rb") as f:
            pos = 0
            for line in f:
                self.offsets.append(pos)
                pos += len(line)
        log.info("indexed %d records in %s", len(self.offsets), path)

    def __len__(self):
        return len(self.offsets)

    def __getitem__(self, i):
        with open(self.path) as f:
            f.seek(self.offsets[i])
            line = f.readline()
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            logging.getLogger("data").warning("record %d is malformed, using record %d instead", i, i - 1, exc_info=True)
            return self[i - 1]
        return torch.tensor(r["x"]), torch.tensor([r["y"]])


data_path = os.path.join(args.workdir, "train.jsonl")
cache_path = os.path.join(args.workdir, "train.cache.pt")
if rank == 0 and not os.path.exists(data_path):
    write_records(data_path)
if dist_on:
    dist.barrier()


def load_dataset():
    if "cache-retry" in noise:
        for attempt in range(1, 4):
            try:
                rows = torch.load(cache_path)
                log.info("loaded tokenized cache %s (%d rows)", cache_path, len(rows))
                ds = JsonlRegression.__new__(JsonlRegression)
                ds.rows = rows
                return ds
            except FileNotFoundError:
                log.warning("cache read failed (attempt %d/3), retrying", attempt, exc_info=True)
                if rank == 0:
                    torch.save(JsonlRegression(data_path).rows, cache_path + ".tmp")
                    os.replace(cache_path + ".tmp", cache_path)
                time.sleep(0.5 * attempt)
    return JsonlRegression(data_path)


ds = LazyJsonl(data_path) if args.lazy_workers else load_dataset()

if args.fault == "stale-lock" and rank == args.fault_rank:
    # shared preprocessing cache guarded by a lock file; wait until the owner releases it
    lock = os.path.join(args.workdir, "shard_cache.lock")
    log.info("waiting for lock %s", lock)
    while os.path.exists(lock):
        time.sleep(1.0)
if args.fault == "stale-lock":
    log.info("waiting for all ranks to finish preprocessing")
    dist.monitored_barrier(timeout=timedelta(seconds=15))

sampler = DistributedSampler(ds, num_replicas=world, rank=rank, shuffle=True, seed=0) if dist_on else None
dl = DataLoader(ds, batch_size=32, sampler=sampler, shuffle=sampler is None, drop_last=True,
                num_workers=args.lazy_workers)

# ---- model -----------------------------------------------------------------
class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.norm_stats = None
        self.l1 = nn.Linear(16, 64)
        self.l2 = nn.Linear(64, 1)
        self.aux = nn.Linear(64, 1)  # auxiliary head, only used when aux loss enabled

    def forward(self, x):
        h = torch.relu(self.l1(x))
        return self.l2(h)


torch.manual_seed(0)
model = Net()
if dist_on:
    ddp_kwargs = {"find_unused_parameters": True} if "unused-find" in noise else {}
    if "unused-find" not in noise:
        model.aux.requires_grad_(False)
    dmodel = DDP(model, **ddp_kwargs)
else:
    dmodel = model
opt = make_optimizer([p_ for p_ in dmodel.parameters() if p_.requires_grad])
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=20, gamma=0.5)

if "warnings" in noise:
    scaler = torch.cuda.amp.GradScaler()  # FutureWarning + "CUDA not available" UserWarning
    sched.step()  # scheduler stepped before the first optimizer step (UserWarning)
    warnings.warn("`Net.aux` is deprecated and will be removed in v0.9; use AuxHead instead",
                  DeprecationWarning, stacklevel=1)
    warnings.simplefilter("default")

start = 0
ckpt = os.path.join(args.ckpt_dir or args.workdir, "ckpt.pt")
if args.resume and os.path.exists(ckpt):
    try:
        state = torch.load(ckpt, map_location="cpu")
    except pickle.UnpicklingError:
        log.warning("weights-only load of %s failed; checkpoint was written by our own trainer, "
                    "retrying with weights_only=False", ckpt, exc_info=True)
        state = torch.load(ckpt, map_location="cpu", weights_only=False)
    model.load_state_dict(state["model"])
    opt.load_state_dict(state["opt"])
    start = state["step"]
    log.info("resumed from %s at step %d (restart count %s)", ckpt, start,
             os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"))

if args.fault == "many-shards":
    # keep every shard of the eval set open for random access
    shard_dir = os.path.join(args.workdir, f"eval_shards_r{rank}")
    os.makedirs(shard_dir, exist_ok=True)
    handles = []
    for i in range(100 + 300 * rank):
        fn = os.path.join(shard_dir, f"shard_{i:05d}.bin")
        if not os.path.exists(fn):
            with open(fn, "wb") as f:
                f.write(os.urandom(64))
        handles.append(open(fn, "rb"))
    log.info("opened %d eval shards", len(handles))


class AsyncMetricWriter:
    def __init__(self, path):
        self.f = open(path, "a")
        self.buf = []

    def add(self, d):
        self.buf.append(d)
        if len(self.buf) >= 8:
            self.flush()

    def flush(self):
        for d in self.buf:
            self.f.write(json.dumps(d) + "\n")
        self.buf = []

    def close(self):
        self.f.close()

    def __del__(self):
        self.flush()


writer = AsyncMetricWriter(os.path.join(args.workdir, f"metrics_r{rank}.jsonl"))

it = iter(dl)
step = start
eval_metrics = {}
bar = None
if "tqdm" in noise and rank == 0:
    from tqdm import tqdm
    bar = tqdm(total=args.steps, initial=start, desc="train", dynamic_ncols=False, ncols=90)
while step < args.steps:
    try:
        x, y = next(it)
    except StopIteration:
        if sampler is not None:
            sampler.set_epoch(step)
        it = iter(dl)
        x, y = next(it)
    if step == args.nan_at and rank == args.nan_rank:
        # a column that is constant in this batch: standardising it divides by a zero std
        x[:, 3] = 1.0
        x = (x - x.mean(0)) / x.std(0)
    if step == args.spike_at:
        y = y * 40.0  # mislabelled batch (units in cm instead of m)
    out = dmodel(x)
    loss = F.mse_loss(out, y)
    bad = torch.tensor([0.0 if torch.isfinite(loss) else 1.0])
    if dist_on:
        dist.all_reduce(bad)
    if bad.item() > 0:
        log.warning("step %d: non-finite loss %s on %d rank(s); skipping update", step, loss.item(), int(bad.item()))
        opt.zero_grad(set_to_none=True)
        step += 1
        continue
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
    opt.step()
    sched.step()
    time.sleep(args.seconds_per_step)
    step += 1
    if rank == 0 and step % 10 == 0:
        eval_metrics["val_loss"] = round(loss.item() * 1.1, 4)
    if step % 10 == 0:
        rec = {"step": step, "loss": round(loss.item(), 4), "grad_norm": round(float(gn), 3),
               "lr": sched.get_last_lr()[0]}
        if args.fault == "metrics-key" and step >= args.fault_step:
            rec["val_loss"] = eval_metrics["val_loss"]
        writer.add(rec)
        log.info("step %d loss %.4f grad_norm %.3f lr %.5f", step, loss.item(), float(gn), sched.get_last_lr()[0])
    if bar is not None:
        bar.update(1)
        bar.set_postfix(loss=f"{loss.item():.3f}")
    if step % args.ckpt_every == 0 and rank == 0:
        payload = {"model": model.state_dict(), "opt": opt.state_dict(), "step": step}
        if "save-args" in noise:
            payload["args"] = args
        try:
            with open(ckpt + ".tmp", "wb") as f:
                torch.save(payload, f)
            os.replace(ckpt + ".tmp", ckpt)
        except PermissionError:
            if "ckpt-fallback" not in noise:
                raise
            local = os.path.join(args.workdir, "ckpt_local")
            os.makedirs(local, exist_ok=True)
            log.error("cannot write checkpoint to %s, saving to %s instead", ckpt, local, exc_info=True)
            ckpt = os.path.join(local, "ckpt.pt")
            with open(ckpt, "wb") as f:
                torch.save(payload, f)
    if step % args.ckpt_every == 0 and os.path.exists(os.path.join(args.workdir, "STOP_AFTER_CKPT")):
        pass

if bar is not None:
    bar.close()
log.info("training finished: %d steps, final loss %.4f", step, loss.item())
if "exit-ignored" in noise:
    writer.close()  # closed explicitly; the pending buffer is flushed by __del__ at exit
else:
    writer.flush()
    writer.close()
    writer.buf = []
if dist_on:
    dist.barrier()
    dist.destroy_process_group()
