"""Classifier trainer with a custom loss, eval metrics, LR schedule, grad accumulation and
EMA.  --fault picks the bug; --fault-rank / --fault-step where it shows up."""
import os, sys, time, math, argparse, warnings, logging
from collections import Counter
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.data.distributed import DistributedSampler
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(__file__))
from common import get_logger, init_dist, MLP, synth

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=40)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--n-train", type=int, default=4096)
p.add_argument("--eval-every", type=int, default=50)
p.add_argument("--ema-decay", type=float, default=0.0)
p.add_argument("--balance-classes", action="store_true")
p.add_argument("--use-tqdm", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--warn-noise", action="store_true")
p.add_argument("--no-ts", action="store_true")
args = p.parse_args()

log = get_logger("trainer", ts=not args.no_ts)
rank, world = init_dist(args.pg_timeout)
torch.manual_seed(1234)
NC = 10
CLASS_NAMES = {i: n for i, n in enumerate(
    ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"])}

X, Y = synth(args.n_train, n_cls=NC, seed=0)
Xv, Yv = synth(512, n_cls=NC, seed=1)
if args.fault in ("outlier_nan", "outlier_inplace"):
    # a block of un-normalised rows (raw sensor units) in the training file
    X[2000] *= 1e4
train_ds = TensorDataset(X, Y)
sampler = DistributedSampler(train_ds, num_replicas=world, rank=rank, shuffle=True, seed=0) if world > 1 else None
dl = DataLoader(train_ds, batch_size=args.bs, sampler=sampler, shuffle=sampler is None, drop_last=True)
# eval shards: contiguous split
if args.fault == "metric_shape":
    # eval split is sorted by class on disk; contiguous shards miss some classes
    order = torch.argsort(Yv, stable=True); Xv, Yv = Xv[order], Yv[order]
per = len(Xv) // world
Xe, Ye = Xv[rank * per:(rank + 1) * per], Yv[rank * per:(rank + 1) * per]
if args.fault == "metric_keyerror" and rank == args.fault_rank:
    Ye = Ye.clone(); Ye[::97] = -100  # ignore_index entries from the annotation tool

model = MLP(d_in=32, hidden=128, n_cls=NC, aux=args.fault == "aux_unused")
ema = None
if args.ema_decay > 0:
    ema = {k: v.detach().clone().double() if args.fault == "ema_dtype" else v.detach().clone()
           for k, v in model.state_dict().items()}
ddp = DDP(model) if world > 1 else model
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3, weight_decay=0.05)
steps_per_epoch = len(dl) // args.accum
if args.fault == "onecycle_accum":
    total_steps = args.epochs * len(dl) // args.accum   # optimizer steps
else:
    total_steps = args.epochs * len(dl)
warmup = max(1, int(0.1 * total_steps))
if args.fault == "onecycle_accum":
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=1e-3, total_steps=total_steps, pct_start=0.1)
else:
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(s, total_steps) / total_steps)))

class_weight = None
if args.balance_classes:
    cnt = Counter(Y[sampler.indices if hasattr(sampler, "indices") else list(sampler)].tolist()) if sampler else Counter(Y.tolist())
    if args.fault == "weight_dtype" and rank == args.fault_rank:
        cnt[3] = cnt[3] // 8   # this rank's shard is badly imbalanced
    freq = np.array([cnt[c] for c in range(NC)], dtype=np.float64)
    if freq.max() / freq.min() > 8:
        log.warning("class imbalance %.1fx on this shard; using inverse-frequency weights", freq.max() / freq.min())
        class_weight = torch.from_numpy(freq.sum() / (NC * freq))

def focal_loss(logits, target, gamma=2.0, eps=1e-8):
    probs = logits.softmax(-1)
    if args.fault == "outlier_inplace" and probs.min() < 1e-6:
        probs.clamp_(min=1e-6)           # numerical safety
    pt = probs.gather(1, target.unsqueeze(1)).squeeze(1)
    if args.fault == "outlier_nan":
        eps = 0.0
    return (-(1 - pt) ** gamma * torch.log(pt + eps)).mean()

def mixup(x, y, alpha=0.4):
    lam = np.random.beta(alpha, alpha)
    idx = torch.randperm(x.size(0))
    y1 = F.one_hot(y, NC).float()
    return lam * x + (1 - lam) * x[idx], lam * y1 + (1 - lam) * y1[idx]

def compute_loss(logits, y):
    if class_weight is not None:
        return F.cross_entropy(logits, y, weight=class_weight, label_smoothing=0.1)
    return focal_loss(logits, y)

@torch.no_grad()
def evaluate(step):
    net = ddp.module if world > 1 else ddp
    net.eval()
    logits = net(Xe); preds = logits.argmax(1)
    valid = Ye >= 0
    acc = (preds[valid] == Ye[valid]).float().mean().item()
    if args.fault == "metric_shape":
        tp = torch.bincount(preds[preds == Ye], minlength=NC)
        support = torch.bincount(Ye)
        recall = tp / support.clamp(min=1)
    else:
        tp = torch.bincount(preds[valid][preds[valid] == Ye[valid]], minlength=NC)
        support = torch.bincount(Ye[valid], minlength=NC)
        recall = tp / support.clamp(min=1)
    per_class = {}
    for c in Ye.unique().tolist() if args.fault == "metric_keyerror" else range(NC):
        per_class[CLASS_NAMES[c]] = recall[c].item() if c >= 0 else 0.0
    if args.warn_noise:
        pred_cnt = np.bincount(preds.numpy(), minlength=NC)
        prec = tp.numpy() / pred_cnt
        if rank == 0:
            log.info("per-class precision: %s", np.array2string(prec, precision=3))
    stats = torch.tensor([acc, recall.mean().item()])
    if world > 1:
        dist.all_reduce(stats); stats /= world
    net.train()
    if rank == 0:
        log.info("eval step %d: acc %.4f mean_recall %.4f worst=%s", step, stats[0], stats[1],
                 min(per_class, key=per_class.get))

def ema_update():
    d = args.ema_decay
    with torch.no_grad():
        for k, v in model.state_dict().items():
            if v.dtype.is_floating_point:
                ema[k].lerp_(v, 1 - d)

log.info("world=%d bs=%d accum=%d steps/epoch=%d total_steps=%d", world, args.bs, args.accum, steps_per_epoch, total_steps)
step = 0; prev_feats = None
if args.warn_noise:
    sched.step()   # align schedule with 1-based step counter
for epoch in range(args.epochs):
    if sampler: sampler.set_epoch(epoch)
    it = dl
    if args.use_tqdm:
        from tqdm import tqdm
        it = tqdm(dl, desc=f"Epoch {epoch}", disable=rank != 0, ncols=110, mininterval=0.5)
    t0 = time.time()
    for i, (x, y) in enumerate(it):
        if args.fault == "mixup_gather" and rank == args.fault_rank and step >= args.fault_step and np.random.rand() < 0.5:
            x, y = mixup(x, y)   # soft targets
        use_aux = args.fault == "aux_unused" and bool((y == 9).any())
        out = ddp(x, use_aux=use_aux) if args.fault == "aux_unused" else ddp(x)
        if use_aux:
            out, aux = out
            loss = compute_loss(out, y) + 0.1 * F.cross_entropy(aux, (y == 9).long())
        else:
            loss = compute_loss(out, y)
        if args.fault == "consistency" and step >= args.fault_step:
            feats = out.log_softmax(-1)
            if prev_feats is not None:
                loss = loss + 0.1 * (feats.mean(0) - prev_feats.mean(0)).pow(2).sum()
            prev_feats = feats            # keep last batch's predictions as teacher
        if args.fault == "outlier_nan" and not math.isfinite(loss.item()):
            print(f"Loss is {loss.item()}, stopping training", flush=True)
            print({"loss": loss.item(), "step": step, "lr": sched.get_last_lr()[0]}, flush=True)
            sys.exit(1)
        (loss / args.accum).backward()
        if (i + 1) % args.accum == 0 or args.fault == "onecycle_accum":
            gn = torch.nn.utils.clip_grad_norm_(ddp.parameters(), 5.0)
            if (i + 1) % args.accum == 0:
                opt.step(); opt.zero_grad(set_to_none=True)
            sched.step()
            if ema is not None and step >= 20:
                ema_update()
        step += 1
        if step % 20 == 0:
            log.info("epoch %d it %d/%d loss %.4f grad_norm %.3f lr %.3e (%.0f samples/s)", epoch, i + 1, len(dl),
                     loss.item(), gn, sched.get_last_lr()[0], (i + 1) * args.bs / (time.time() - t0))
        if step % args.eval_every == 0:
            evaluate(step)
    log.info("epoch %d finished in %.1fs", epoch, time.time() - t0)
if world > 1:
    dist.barrier()
    dist.destroy_process_group()
log.info("done. final lr %.3e", sched.get_last_lr()[0])
