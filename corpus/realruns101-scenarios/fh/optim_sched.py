"""Optimizer / LR-scheduler lifecycle scenarios: resume after model change, scheduler stepping bugs."""
import argparse, os, sys, time, logging, math
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--phase", default="train", choices=["train", "resume"])
p.add_argument("--ckpt-dir", default="/work/rr101/fh/work/ckpt")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--batches", type=int, default=10)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--sched", default="cosine", choices=["cosine", "onecycle"])
p.add_argument("--sched-per", default="update", choices=["update", "microbatch"])
p.add_argument("--sched-first", action="store_true", help="call scheduler.step() at the top of the loop")
p.add_argument("--arch", default="v1", choices=["v1", "v2-adapter", "v2-wide"])
p.add_argument("--no-decay-groups", action="store_true")
p.add_argument("--ddp", action="store_true")
a = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
if a.ddp:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
else:
    rank = 0
log = logging.getLogger(f"trainer.r{rank}")

class Net(nn.Module):
    def __init__(s, arch):
        super().__init__()
        w = 96 if arch == "v2-wide" else 64
        s.emb = nn.Linear(20, w); s.body = nn.Sequential(nn.LayerNorm(w), nn.Linear(w, w), nn.GELU(), nn.Linear(w, w))
        s.adapter = nn.Linear(w, w) if arch == "v2-adapter" else None
        s.head = nn.Linear(w, 5)
    def forward(s, x):
        h = s.body(s.emb(x))
        if s.adapter is not None:
            h = h + s.adapter(h)
        return s.head(h)

def param_groups(m):
    if a.no_decay_groups:
        decay = [p_ for n, p_ in m.named_parameters() if p_.ndim >= 2]
        nod = [p_ for n, p_ in m.named_parameters() if p_.ndim < 2]
        return [{"params": decay, "weight_decay": 0.05}, {"params": nod, "weight_decay": 0.0}]
    return m.parameters()

torch.manual_seed(0)
model = Net(a.arch)
net = model
if a.ddp:
    from torch.nn.parallel import DistributedDataParallel as DDP
    net = DDP(model)
opt = torch.optim.AdamW(param_groups(model), lr=2e-3)
updates_per_epoch = math.ceil(a.batches / a.accum)
total = a.epochs * updates_per_epoch
if a.sched == "onecycle":
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=5e-3, total_steps=total)
else:
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total)
log.info("arch=%s params=%d updates/epoch=%d total_updates=%d sched=%s", a.arch,
         sum(p_.numel() for p_ in model.parameters()), updates_per_epoch, total, a.sched)

start_epoch = 0
ck = os.path.join(a.ckpt_dir, "last.pt")
if a.phase == "resume":
    log.info("resuming from %s", ck)
    state = torch.load(ck, map_location="cpu")
    missing, unexpected = model.load_state_dict(state["model"], strict=False)
    if missing or unexpected:
        log.warning("model load: missing=%s unexpected=%s (new modules will be trained from scratch)", missing, unexpected)
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    start_epoch = state["epoch"] + 1
    log.info("resumed at epoch %d lr=%.2e", start_epoch, sched.get_last_lr()[0])

g = torch.Generator().manual_seed(7 + rank)
X = torch.randn(a.batches * 16, 20, generator=g); Y = (X[:, :5].argmax(1))
for ep in range(start_epoch, start_epoch + a.epochs):
    tot = 0.0
    for i in range(a.batches):
        if a.sched_first:
            sched.step()
        x, y = X[i * 16:(i + 1) * 16], Y[i * 16:(i + 1) * 16]
        loss = F.cross_entropy(net(x), y) / a.accum
        loss.backward(); tot += loss.item() * a.accum
        if a.sched_per == "microbatch" and not a.sched_first:
            sched.step()
        if (i + 1) % a.accum == 0 or i + 1 == a.batches:
            opt.step(); opt.zero_grad()
            if a.sched_per == "update" and not a.sched_first:
                sched.step()
    log.info("epoch %d mean loss %.4f lr %.3e", ep, tot / a.batches, sched.get_last_lr()[0])
    if rank == 0:
        os.makedirs(a.ckpt_dir, exist_ok=True)
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "scheduler": sched.state_dict(), "epoch": ep}, ck)
        log.info("saved %s", ck)
if a.ddp:
    dist.barrier(); dist.destroy_process_group()
log.info("finished")
