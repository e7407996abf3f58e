"""Small classifier / LM training on CPU with python logging; knobs for lr, autocast, custom losses, devices."""
import argparse, logging, math, sys, time, warnings
import torch, torch.nn as nn, torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--optim", default="adamw")
p.add_argument("--steps", type=int, default=60)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--loss", default="ce", choices=["ce", "manual_nll", "focal"])
p.add_argument("--bf16", action="store_true", help="torch.autocast(cpu, bfloat16)")
p.add_argument("--model-dtype", default="float32")
p.add_argument("--device", default="cpu")
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--sparse-emb", action="store_true")
p.add_argument("--scaler", action="store_true", help="use GradScaler (copied from the GPU recipe)")
p.add_argument("--stateful-rnn", action="store_true", help="carry GRU hidden state across batches (TBPTT)")
p.add_argument("--aux", action="store_true", help="add dense per-example features (float32 from the data pipeline)")
p.add_argument("--legacy-amp", action="store_true", help="torch.cuda.amp autocast/GradScaler as in the original GPU script")
p.add_argument("--onecycle", action="store_true")
p.add_argument("--dist", action="store_true")
p.add_argument("--log-every", type=int, default=5)
args = p.parse_args()

rank = 0
if args.dist:
    import torch.distributed as dist
    from datetime import timedelta
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s | %(levelname)-7s | rank{rank} | %(message)s")
log = logging.getLogger("trainer")
if args.detect_anomaly:
    torch.autograd.set_detect_anomaly(True)
torch.manual_seed(1234 + rank)

V, D, C = 200, 48, 10
class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D, sparse=args.sparse_emb)
        self.rnn = nn.GRU(D, D, batch_first=True)
        self.head = nn.Sequential(nn.Linear(D, D), nn.ReLU(), nn.Linear(D, C))
        self.aux = nn.Linear(4, D) if args.aux else None
    def forward(self, x, h=None, feats=None):
        o, h = self.rnn(self.emb(x), h)
        z = o[:, -1]
        if self.aux is not None:
            z = z + self.aux(feats)
        return self.head(z), h

dev = torch.device(args.device)
model = Model().to(device=dev, dtype=getattr(torch, args.model_dtype))
if args.optim == "adamw":
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr)
else:
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
scaler = torch.amp.GradScaler("cpu") if args.scaler else None
if args.legacy_amp:
    scaler = torch.cuda.amp.GradScaler()
sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=args.lr * 10, total_steps=args.steps) if args.onecycle else None
log.info("model params=%d lr=%g accum=%d bf16=%s dtype=%s device=%s", sum(p.numel() for p in model.parameters()), args.lr, args.accum, args.bf16, args.model_dtype, dev)

W = torch.randn(V, C)
def batch(bs=32, T=12):
    x = torch.randint(0, V, (bs, T))
    y = W[x].sum(1).argmax(-1)
    return x, y

def loss_fn(logits, y):
    if args.loss == "ce":
        return F.cross_entropy(logits, y)
    probs = torch.softmax(logits, -1)
    if args.loss == "manual_nll":
        return -(torch.log(probs.gather(1, y[:, None]))).mean()
    pt = probs.gather(1, y[:, None])
    return (-(1 - pt) ** 2 * torch.log(pt)).mean()

h = None
t0 = time.time()
for step in range(args.steps):
    for micro in range(args.accum):
        x, y = batch()
        x, y = x.to(dev), y.to(dev)
        amp_ctx = torch.cuda.amp.autocast() if args.legacy_amp else torch.autocast("cpu", dtype=torch.bfloat16, enabled=args.bf16)
        with amp_ctx:
            feats = torch.randn(x.size(0), 4).to(dev) if args.aux else None
            logits, h_new = model(x, h if args.stateful_rnn else None, feats)
            loss = loss_fn(logits, y) / args.accum
        if args.stateful_rnn:
            h = h_new
        if scaler:
            scaler.scale(loss).backward()
        else:
            loss.backward()
        if sched is not None:
            sched.step()
    if args.dist:  # manual data-parallel gradient averaging
        for prm in model.parameters():
            if prm.grad is not None:
                dist.all_reduce(prm.grad); prm.grad /= dist.get_world_size()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1e9) if not args.sparse_emb else torch.tensor(0.)
    if scaler:
        scaler.step(opt); scaler.update()
    else:
        opt.step()
    opt.zero_grad(set_to_none=True)
    if step % args.log_every == 0 or step == args.steps - 1:
        acc = (logits.argmax(-1) == y).float().mean().item()
        log.info("step %4d | loss %.4f | acc %.3f | grad_norm %.3e | %.1f it/s", step, loss.item() * args.accum, acc, gn.item(), (step + 1) / (time.time() - t0))
log.info("training complete in %.1fs", time.time() - t0)
if args.dist:
    dist.destroy_process_group()
