"""Tiny token-LM trained with DDP (gloo, CPU), logging as JSON lines or timestamped text.

--fault selects a real bug / misconfiguration on --fault-rank at --fault-step:
  none, metrics-keyerror, aux-head-unused, hidden-from-env, shard-vocab, outlier-feature,
  stuck-lock, no-truncation, ckpt-save, missing-shard, metric-shape
"""
import argparse
import fcntl
import json
import math
import os
import sys
import time
import warnings
from datetime import timedelta

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jlog  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--logfmt", default="plain")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--data-dir", default="data")
p.add_argument("--out-dir", default="out")
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--pg-timeout", type=int, default=40)
p.add_argument("--progress", action="store_true")
p.add_argument("--push-metrics", default="")
args = p.parse_args()

log = jlog.setup(args.logfmt, "trainer")
import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
log.info("process group initialised", extra={"backend": "gloo", "world_size": world, "pid": os.getpid()})
if os.environ.get("PIDFILE_DIR"):
    with open(os.path.join(os.environ["PIDFILE_DIR"], f"rank{rank}.pid"), "w") as f:
        f.write(str(os.getpid()))

hidden = 64
if args.fault == "hidden-from-env" and rank == args.fault_rank:
    # the node-local env file of this host still carries the old width
    hidden = int(os.environ.get("MODEL_HIDDEN", "96"))


class TinyLM(nn.Module):
    def __init__(self, vocab, d, aux=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
        self.feat = nn.Linear(8, d)
        self.head = nn.Linear(d, vocab)
        self.aux_head = nn.Linear(d, 4) if aux else None

    def forward(self, ids, feats):
        h = self.emb(ids) + self.feat(feats).unsqueeze(1)
        if ids.shape[1] > 1 and args.fault == "no-truncation":
            # causal mask materialised for the batch length
            n = ids.shape[1]
            mask = torch.full((ids.shape[0], n, n), float("-inf")).triu_(1)
            h = h + mask.logsumexp(-1, keepdim=True).clamp(max=0) * 0
        h = h + self.ff(h)
        return self.head(h)


model = TinyLM(args.vocab, hidden, aux=(args.fault == "aux-head-unused"))
log.info("model built", extra={"params": sum(p.numel() for p in model.parameters()), "hidden": hidden})
ddp = DDP(model)
opt = torch.optim.AdamW(ddp.parameters(), lr=3e-3)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 4))


def load_shard(r):
    path = os.path.join(args.data_dir, f"shard-{r:05d}.json")
    with open(path) as f:
        return json.load(f)


if args.fault == "stuck-lock" and rank == args.fault_rank:
    # tokenised-cache lock: another job on this node holds it
    lockp = os.path.join(args.data_dir, ".cache.lock")
    log.info("waiting for dataset cache lock", extra={"lock": lockp})
    lf = open(lockp, "w")
    fcntl.flock(lf, fcntl.LOCK_EX)

shard = load_shard(rank)
log.info("loaded shard", extra={"shard": rank, "docs": len(shard["docs"])})

if args.fault == "stuck-lock":
    log.info("dataset ready, waiting for peers", extra={"docs": len(shard["docs"])})
    dist.monitored_barrier(timeout=timedelta(seconds=20))

g = torch.Generator().manual_seed(100 + rank)


def get_batch(step):
    docs = shard["docs"]
    bs = 4
    chunk = [docs[(step * bs + i) % len(docs)] for i in range(bs)]
    if args.fault == "no-truncation":
        n = max(len(d) for d in chunk)
    else:
        n = 32
    ids = torch.zeros(bs, n, dtype=torch.long)
    for i, d in enumerate(chunk):
        d = d[:n]
        ids[i, : len(d)] = torch.tensor(d)
    feats = torch.randn(bs, 8, generator=g)
    if args.fault == "outlier-feature" and rank == args.fault_rank and step == args.fault_step:
        feats[1, 3] = shard.get("raw_feature_max", 3.0e4)
    return ids, feats


if args.fault == "outlier-feature":
    torch.autograd.set_detect_anomaly(True)

it = range(args.steps)
if args.progress:
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", disable=False, mininterval=0)

sched.step()  # warm-up schedule "initialised" before the loop (harmless order warning)
t0 = time.time()
for step in it:
    ids, feats = get_batch(step)
    logits = ddp(ids[:, :-1], feats)
    if args.fault == "outlier-feature":
        probs = logits.softmax(-1)
        tgt = F.one_hot(ids[:, 1:], args.vocab).float()
        loss = -(tgt * probs.log()).sum(-1).mean()
    else:
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
    opt.zero_grad()
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 1.0)
    if gn > 5.0:
        log.warning("gradient norm %.1f above threshold, clipped to 1.0", float(gn), extra={"step": step})
    opt.step()
    sched.step()
    metrics = {"train_loss": loss.detach()}
    if rank == 0 and step % 2 == 1:
        metrics["val_loss"] = loss.detach() * 1.02
    if args.fault == "metrics-keyerror" and step == args.fault_step:
        # averaging helper written for the single-GPU run
        red = torch.stack([metrics["train_loss"], metrics["val_loss"]])
    elif args.fault == "metric-shape" and step == args.fault_step:
        # rank-local extra metrics appended when present
        red = torch.stack(list(metrics.values()))
        dist.all_reduce(red)
    else:
        red = metrics["train_loss"].clone().reshape(1)
        dist.all_reduce(red)
    red = red / world
    log.info("step %d loss %.4f", step, float(red[0]),
             extra={"step": step, "loss": round(float(red[0]), 4), "lr": sched.get_last_lr()[0],
                    "grad_norm": round(float(gn), 3), "tokens_per_s": int(ids.numel() * (step + 1) / (time.time() - t0 + 1e-6))})
    if args.fault == "ckpt-save" and step == args.fault_step and rank == 0:
        d = os.path.join(args.out_dir, f"step_{step:06d}")
        os.makedirs(d, exist_ok=True)
        log.info("saving checkpoint", extra={"dir": d})
        import pickle
        with open(os.path.join(d, "train_state.pkl"), "wb") as f:
            pickle.dump({"model": {k: v.numpy() for k, v in model.state_dict().items()},
                         "optim": {k: {kk: (vv.numpy() if torch.is_tensor(vv) else vv) for kk, vv in s.items()}
                                   for k, s in opt.state_dict()["state"].items()},
                         "step": step}, f)
        log.info("checkpoint saved", extra={"dir": d})
    if args.fault == "ckpt-save":
        dist.barrier()
    if args.push_metrics and rank == 0 and step % 3 == 2:
        import urllib.request
        try:
            urllib.request.urlopen(args.push_metrics, data=json.dumps({"step": step, "loss": float(red[0])}).encode(), timeout=2)
        except Exception:
            log.exception("metrics push to %s failed; buffering and continuing", args.push_metrics, extra={"step": step})
    if os.environ.get("STEP_SLEEP"):
        time.sleep(float(os.environ["STEP_SLEEP"]))

log.info("training finished", extra={"steps": args.steps, "elapsed_s": round(time.time() - t0, 2)})
dist.destroy_process_group()
