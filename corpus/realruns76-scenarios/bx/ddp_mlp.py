"""Small DDP MLP classifier on synthetic sharded data (gloo, CPU).

Faults (selected with --fault, applied on --fault-rank at --fault-step):
  none        healthy run (use --noise for alarming-but-harmless warnings)
  shape       rank's validation shard was written with an older feature set (24 instead of 32 features)
  nan         rank's training shard contains an inf feature row; anomaly detection on (--anomaly) or loss check
  missing     rank's epoch-1 shard file does not exist
  collective  rank all-reduces an extra metric (metrics dict built from rank-local keys)
  segv        rank's "fast decoder" dereferences a NULL pointer through ctypes
  pidfile     (used for external kill) every rank writes its pid to <run-dir>/pid.<rank>
  oom         rank 0 gathers all validation logits with an accidental outer product (needs ulimit -v)
  dlworker    rank's shard has a label name not in the label map (KeyError inside DataLoader worker)
  collate     rank's shard contains a sample of a different length (num_workers=0)
  dlpids      DataLoader workers write their pids (for external kill of a worker)
  unused      model has an auxiliary head that is never used in the loss (all ranks)
  nclasses    num_classes computed from the rank-local shard (rank's shard lacks the last class)
  ckpt        resume from a checkpoint file (path via --resume)
  stalelock   rank waits on a stale lock file left by a previous run; rank 0 uses monitored_barrier
  onecycle    OneCycleLR total_steps computed from the wrong (per-rank, unsharded) length
  savelong    checkpoint file name built from the full hyper-parameter dict
"""
import argparse
import ctypes
import json
import logging
import math
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

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--steps-per-epoch", type=int, default=12)
p.add_argument("--batch-size", type=int, default=16)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--run-dir", default="run")
p.add_argument("--resume", default=None)
p.add_argument("--logging", action="store_true", help="use logging with timestamps instead of print")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--noise", action="store_true")
p.add_argument("--anomaly", action="store_true")
p.add_argument("--skip-nonfinite", action="store_true", help="skip the optimizer step when the grad norm is inf/nan")
p.add_argument("--step-sleep", type=float, default=0.05)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--eval-every", type=int, default=6)
p.add_argument("--save-every-epoch", action="store_true")
args = p.parse_args()

FEAT = 32
NCLS = 10
LABELS = [f"class_{i}" for i in range(NCLS)]
LABEL_MAP = {n: i for i, n in enumerate(LABELS)}

dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
rank = dist.get_rank()
world = dist.get_world_size()
torch.manual_seed(0)

if args.logging:
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s [%(levelname)s] [rank{rank}] %(name)s: %(message)s",
    )
    log = logging.getLogger("train")
    info = log.info
    warn = log.warning
else:
    def info(msg):
        print(msg)

    def warn(msg):
        print("WARNING: " + msg)

os.makedirs(args.run_dir, exist_ok=True)
data_dir = os.path.join(args.run_dir, "data")


def make_shards():
    """rank 0 writes the data shards once (like a preprocessing step)."""
    os.makedirs(data_dir, exist_ok=True)
    g = torch.Generator().manual_seed(1234)
    w_true = torch.randn(FEAT, NCLS, generator=g)
    n = args.steps_per_epoch * args.batch_size
    for ep in range(args.epochs):
        for r in range(world):
            x = torch.randn(n, FEAT, generator=g)
            y = (x @ w_true).argmax(1)
            names = [LABELS[i] for i in y.tolist()]
            if args.fault == "nan" and r == args.fault_rank and ep == 0:
                x[args.fault_step * args.batch_size + 3, 7] = float("inf")
            if args.fault == "dlworker" and r == args.fault_rank and ep == 0:
                names[args.fault_step * args.batch_size + 5] = "class_10_unreviewed"
            samples = x
            if args.fault == "collate" and r == args.fault_rank and ep == 0:
                samples = [row for row in x]
                samples[args.fault_step * args.batch_size + 2] = torch.cat([x[0], torch.zeros(4)])
            if args.fault == "nclasses" and r == args.fault_rank:
                keep = [i for i, nm in enumerate(names) if nm != LABELS[-1]]
                names = [names[i] for i in keep]
                samples = x[keep]
            path = os.path.join(data_dir, f"train_ep{ep}_rank{r}.pt")
            if args.fault == "missing" and r == args.fault_rank and ep == 1:
                continue
            if args.fault == "symlink" and ep == 1:
                # shards of later epochs live in a cache dir and are linked in (link target written
                # relative to the wrong directory for one rank -> the link points at itself)
                os.makedirs(os.path.join(data_dir, "cache"), exist_ok=True)
                name = os.path.basename(path)
                torch.save({"x": samples, "labels": names}, os.path.join(data_dir, "cache", name))
                os.symlink(name if r == args.fault_rank else os.path.join("cache", name), path)
                continue
            torch.save({"x": samples, "labels": names}, path)
        # validation shards
    for r in range(world):
        xv = torch.randn(64, FEAT if not (args.fault == "shape" and r == args.fault_rank) else 24, generator=g)
        yv = torch.randint(0, NCLS, (64,), generator=g)
        torch.save({"x": xv, "y": yv}, os.path.join(data_dir, f"val_rank{r}.pt"))


class ShardDataset(Dataset):
    def __init__(self, path):
        d = torch.load(path)
        self.x = d["x"]
        self.labels = d["labels"]

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return self.x[i], LABEL_MAP[self.labels[i]]


def worker_init(wid):
    if args.fault == "dlpids":
        with open(os.path.join(args.run_dir, f"dlworker.rank{rank}.w{wid}"), "w") as f:
            f.write(str(os.getpid()))


class Net(nn.Module):
    def __init__(self, ncls):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(FEAT, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, ncls)
        if args.fault == "unused":
            self.aux_head = nn.Linear(64, 1)  # kept for an ablation, never used

    def forward(self, x):
        h = self.body(x)
        if args.fault == "inplace":
            # soft gating of hidden units; small gates zeroed in place to "sparsify"
            gate = torch.sigmoid(h)
            gate *= (gate > 0.55)
            h = h * gate
        return self.head(h)


if rank == 0:
    make_shards()
dist.barrier()

if args.fault == "pidfile":
    with open(os.path.join(args.run_dir, f"pid.{rank}"), "w") as f:
        f.write(str(os.getpid()))

if args.fault == "stalelock" and rank == args.fault_rank:
    # wait for the feature cache lock; a previous crashed run left it behind
    lock = os.path.join(args.run_dir, "feature_cache.lock")
    info(f"rank {rank}: waiting for feature cache lock {lock}")
    while os.path.exists(lock):
        time.sleep(1)

if args.fault == "stalelock":
    if rank == 0:
        info("rank 0: waiting for all ranks to finish building the feature cache")
    dist.monitored_barrier(timeout=timedelta(seconds=15))

train0 = ShardDataset(os.path.join(data_dir, f"train_ep0_rank{rank}.pt"))
ncls = NCLS
if args.fault == "nclasses":
    ncls = len(set(train0.labels))
    info(f"rank {rank}: detected {ncls} classes in training data")

model = Net(ncls)
ddp = DDP(model, find_unused_parameters=args.noise)
opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3, weight_decay=0.01)

steps_total = args.epochs * args.steps_per_epoch
if args.fault == "onecycle":
    # total steps from the epoch length of one shard divided by world size (wrong: shards already per-rank)
    steps_total = args.epochs * math.ceil(len(train0) / (args.batch_size * world))
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=steps_total)

start_epoch = 0
if args.resume:
    info(f"rank {rank}: resuming from {args.resume}")
    ck = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optim"])
    start_epoch = ck["epoch"] + 1

if args.anomaly:
    torch.autograd.set_detect_anomaly(True)

if rank == 0:
    info(f"world_size={world} epochs={args.epochs} steps/epoch={args.steps_per_epoch} "
         f"batch_size={args.batch_size} workers={args.workers} params={sum(p.numel() for p in model.parameters())}")


def evaluate(step):
    d = torch.load(os.path.join(data_dir, f"val_rank{rank}.pt"))
    ddp.eval()
    with torch.no_grad():
        logits = ddp(d["x"])
        loss = F.cross_entropy(logits, d["y"])
        acc = (logits.argmax(1) == d["y"]).float().mean()
        if args.fault == "oom":
            allx = [torch.zeros_like(logits) for _ in range(world)]
            dist.all_gather(allx, logits)
        if args.fault == "oom" and rank == 0:
            # calibration statistics over every pair of validation logits (bug: outer product over all
            # samples of all ranks x 400 temperature grid instead of per sample)
            allx = torch.cat(allx).repeat(400, 1)
            pair = allx.unsqueeze(0) * allx.unsqueeze(1)
            acc = acc * 0 + pair.mean()
    ddp.train()
    t = torch.tensor([loss.item(), acc.item()])
    dist.all_reduce(t)
    t /= world
    return t


global_step = 0
for epoch in range(start_epoch, args.epochs):
    ds = train0 if epoch == 0 else ShardDataset(os.path.join(data_dir, f"train_ep{epoch}_rank{rank}.pt"))
    dl = DataLoader(ds, batch_size=args.batch_size, shuffle=False, num_workers=args.workers,
                    worker_init_fn=worker_init, persistent_workers=False)
    it = dl
    if args.tqdm and rank == 0:
        from tqdm import tqdm
        it = tqdm(dl, desc=f"epoch {epoch}", total=len(dl))
    for i, (x, y) in enumerate(it):
        if args.fault == "segv" and rank == args.fault_rank and global_step == args.fault_step:
            # "fast path" decoder for packed records: reads the record header through a raw pointer
            base = ctypes.c_void_p(0).value or 0  # mmap of the record file failed silently -> NULL base
            ctypes.string_at(base + 64, 16)
        if args.fault == "dlpids" and global_step == args.fault_step:
            time.sleep(4)
        out = ddp(x)
        loss = F.cross_entropy(out, y)
        if not torch.isfinite(loss):
            warn(f"rank {rank}: non-finite loss {loss.item()} at epoch {epoch} step {global_step}")
        opt.zero_grad()
        loss.backward()
        gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
        if args.skip_nonfinite and not torch.isfinite(gn):
            warn(f"rank {rank}: grad norm {gn.item()} is not finite, skipping optimizer step {global_step}")
            opt.zero_grad()
        else:
            opt.step()
        sched.step()
        metrics = {"loss": loss.item(), "grad_norm": gn.item()}
        if args.fault == "collective" and rank == args.fault_rank and global_step >= args.fault_step:
            # rank-local extra metric only present when this rank saw a "rare" class in the batch
            metrics["rare_frac"] = float((y == 9).float().mean())
        mt = torch.tensor(list(metrics.values()))
        dist.all_reduce(mt)
        mt /= world
        if rank == 0 and global_step % 2 == 0:
            msg = (f"epoch {epoch} step {global_step} loss {mt[0].item():.4f} grad_norm {mt[1].item():.3f} "
                   f"lr {sched.get_last_lr()[0]:.2e}")
            if args.tqdm:
                it.set_postfix(loss=f"{mt[0].item():.4f}")
            else:
                info(msg)
        if (global_step + 1) % args.eval_every == 0:
            vm = evaluate(global_step)
            if rank == 0:
                info(f"[eval] step {global_step} val_loss {vm[0].item():.4f} val_acc {vm[1].item():.3f}")
        global_step += 1
        time.sleep(args.step_sleep)
    if args.save_every_epoch or args.fault == "savelong":
        if rank == 0:
            os.makedirs(os.path.join(args.run_dir, "ckpt"), exist_ok=True)
            name = f"epoch{epoch}.pt"
            if args.fault == "savelong":
                hp = {k: v for k, v in vars(args).items() if k not in ("run_dir",)}
                hp.update({"model": "mlp-" + "-".join(str(s) for s in [FEAT, 64, 64, NCLS]),
                           "optimizer": "AdamW(lr=3e-3,betas=(0.9,0.999),eps=1e-8,weight_decay=0.01)",
                           "scheduler": "OneCycleLR(max_lr=3e-3,pct_start=0.3,anneal=cos,div=25,final_div=1e4)",
                           "data": "synthetic-gaussian-argmax-v2-shards-per-rank-no-aug-feat32-ncls10",
                           "note": "baseline-run-for-ablation-of-weight-decay-and-warmup-with-onecycle-policy"})
                name = "ckpt_" + "_".join(f"{k}={v}" for k, v in hp.items()) + f"_epoch{epoch}.pt"
            path = os.path.join(args.run_dir, "ckpt", name)
            torch.save({"model": model.state_dict(), "optim": opt.state_dict(), "epoch": epoch}, path)
            info(f"saved checkpoint {path}")
        dist.barrier()
    if rank == 0:
        info(f"epoch {epoch} done")

if rank == 0:
    info("training finished")
dist.destroy_process_group()
