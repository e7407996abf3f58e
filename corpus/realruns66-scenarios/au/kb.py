"""Ordinary failures induced for real. --fault selects one, --rank/--step where."""
import os, sys, time, json, signal, resource, argparse
import torch, torch.nn as nn, torch.nn.functional as F, torch.distributed as dist
from _common import *

p = argparse.ArgumentParser()
p.add_argument("--fault", required=True)
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=6)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--steps", type=int, default=0)
p.add_argument("--ckpt", default="/tmp/au_kb")
p.add_argument("--resume", default=None)
p.add_argument("--mem-limit-mb", type=int, default=0)
p.add_argument("--vocab", type=int, default=50000)
p.add_argument("--pidfile", default=None)
a = p.parse_args()

rank, world = setup(timeout=25)
log = make_logger(rank)
if a.pidfile:
    open(f"{a.pidfile}.{rank}", "w").write(str(os.getpid()))
if a.mem_limit_mb and rank == a.rank:
    # per-process address-space cap from the site wrapper (ulimit -v equivalent)
    resource.setrlimit(resource.RLIMIT_AS, (a.mem_limit_mb << 20, a.mem_limit_mb << 20))
    log.info("address-space limit %d MB", a.mem_limit_mb)

class BinHead(nn.Module):
    def __init__(self):
        super().__init__(); self.body = MLP(c=8); self.out = nn.Linear(8, 1)
    def forward(self, x): return self.out(torch.relu(self.body(x)))

class Tagger(nn.Module):
    def __init__(self, vocab, d=64):
        super().__init__(); self.emb = nn.Embedding(vocab, d); self.head = nn.Linear(d, 4)
    def forward(self, ids): return self.head(self.emb(ids).mean(1))

def f1_binary(preds, target):
    assert preds.shape == target.shape, f"f1: preds {tuple(preds.shape)} vs target {tuple(target.shape)}"
    tp = ((preds == 1) & (target == 1)).sum().item(); fp = ((preds == 1) & (target == 0)).sum().item()
    fn = ((preds == 0) & (target == 1)).sum().item()
    return 2 * tp / max(1, 2 * tp + fp + fn)

torch.manual_seed(0)
if a.fault == "metric":
    model = BinHead()
elif a.fault == "memlimit":
    vocab = a.vocab if rank != a.rank else a.vocab  # same config everywhere
    model = Tagger(vocab)
else:
    model = MLP()
net = wrap(model, world)
opt = torch.optim.Adam(net.parameters(), lr=1e-2)
start = 0
if a.resume:
    log.info("resuming from %s", a.resume)
    sd = torch.load(a.resume, map_location="cpu")
    net.load_state_dict(sd["model"]); opt.load_state_dict(sd["opt"]); start = sd["epoch"] + 1

ds = data(512)
dl = loader(ds, rank, world)
g = 0
stop = False
try:
    for ep in range(start, a.epochs):
        if world > 1: dl.sampler.set_epoch(ep)
        for x, y in dl:
            g += 1
            if a.fault == "metric":
                yb = (y % 2)
                loss = F.binary_cross_entropy_with_logits(net(x).squeeze(1), yb.float())
            elif a.fault == "memlimit":
                ids = (x.abs() * 1000).long() % a.vocab
                loss = F.cross_entropy(net(ids), y)
            else:
                loss = F.cross_entropy(net(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if a.fault in ("sigint", "sigterm", "killed"):
                time.sleep(0.15)
            if g % 4 == 0:
                log.info("epoch %d step %d loss %.4f", ep, g, loss.item())
            if a.steps and g >= a.steps: break
        if a.fault == "metric":
            # validation: each rank scores its own slice of the 65-example dev set
            vx, vy = data(65, seed=3).tensors
            vx, vy = vx[rank::world], (vy[rank::world] % 2)
            preds, f1s = [], []
            net.eval()
            with torch.no_grad():
                for i in range(0, len(vx), 16):
                    logits = net(vx[i:i+16]).squeeze()
                    f1s.append(f1_binary((logits > 0).long(), vy[i:i+16]))
            net.train()
            t = torch.tensor([sum(f1s) / len(f1s)])
            if world > 1: dist.all_reduce(t)
            log.info("epoch %d dev f1 %.3f", ep, t.item() / world)
        if rank == 0:
            os.makedirs(a.ckpt, exist_ok=True)
            torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "epoch": ep}, os.path.join(a.ckpt, "last.pt"))
            log.info("saved checkpoint epoch %d", ep)
except KeyboardInterrupt:
    log.warning("KeyboardInterrupt at step %d: saving checkpoint before exit", g)
    if rank == 0:
        os.makedirs(a.ckpt, exist_ok=True)
        torch.save({"model": net.state_dict(), "opt": opt.state_dict(), "epoch": ep, "step": g}, os.path.join(a.ckpt, "interrupted.pt"))
        log.warning("saved %s", os.path.join(a.ckpt, "interrupted.pt"))
    sys.exit(130)
log.info("finished %d steps", g)
cleanup(world)
