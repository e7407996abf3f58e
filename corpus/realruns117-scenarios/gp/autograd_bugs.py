"""Small trainer used to reproduce autograd misuse seen in real code.
--bug selects the defect, --bug-rank / --bug-step where it shows up."""
import argparse, os, sys, math, time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup_logging, init_dist, cleanup

ap = argparse.ArgumentParser()
ap.add_argument("--bug", default="none")
ap.add_argument("--bug-rank", type=int, default=-1)   # -1: all ranks
ap.add_argument("--bug-step", type=int, default=0)
ap.add_argument("--steps", type=int, default=30)
ap.add_argument("--out-style", default="print")
ap.add_argument("--bar", action="store_true")
ap.add_argument("--bs", type=int, default=16)
args = ap.parse_args()

torch.manual_seed(0)
rank, world = init_dist()
say = setup_logging(args.out_style)
def bug_here(step):
    return args.bug_rank in (-1, rank) and step >= args.bug_step


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.norm = nn.LayerNorm(d)
    def forward(self, x, inplace_residual=False):
        h = torch.sigmoid(self.fc1(self.norm(x)))
        if inplace_residual:
            # "memory saving" gate: scale the activation in place
            h *= 0.5
        return x + self.fc2(h)


class Net(nn.Module):
    def __init__(self, d=32, n_cls=5):
        super().__init__()
        self.inp = nn.Linear(20, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(2)])
        self.head = nn.Linear(d, n_cls)
    def forward(self, x, inplace_residual=False):
        x = self.inp(x)
        for b in self.blocks:
            x = b(x, inplace_residual)
        return self.head(x)


class SeqModel(nn.Module):
    def __init__(self, vocab=50, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.rnn = nn.GRU(d, d, batch_first=True)
        self.out = nn.Linear(d, vocab)
    def forward(self, x, h=None):
        y, h = self.rnn(self.emb(x), h)
        return self.out(y), h


class ClampGrad(torch.autograd.Function):
    """straight-through clamp written by hand"""
    @staticmethod
    def forward(ctx, x, lo, hi):
        ctx.save_for_backward(x)
        ctx.lo, ctx.hi = lo, hi
        return x.clamp(lo, hi)
    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * ((x > ctx.lo) & (x < ctx.hi)).to(g.dtype)


def batch(step, bs=None):
    g = torch.Generator().manual_seed(1000 * rank + step)
    bs = bs or args.bs
    x = torch.randn(bs, 20, generator=g)
    y = (x[:, :5].argmax(1))
    return x, y

if args.bug == "bptt":
    model = SeqModel()
else:
    model = Net()
if world > 1:
    model = DDP(model)
    say(f"rank {rank}/{world}: DDP wrapped, {sum(p.numel() for p in model.parameters())} params")
core = model.module if world > 1 else model

if args.bug == "nonleaf_opt":
    # move to float64 "for numerical stability" after building param list
    params = [p.double() for p in core.parameters()]
    opt = torch.optim.SGD(params, lr=0.05, momentum=0.9)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)

ema = None
if args.bug == "ema_leaf":
    ema = {k: v.detach().clone() for k, v in core.state_dict().items()}

frozen_cache = {}
if args.bug == "inference_cache":
    # precompute teacher features once, fast
    teacher = nn.Linear(20, 32)
    with torch.inference_mode():
        for s in range(args.steps):
            x, _ = batch(s)
            frozen_cache[s] = teacher(x)
    proj = nn.Linear(32, 20)
    opt.add_param_group({"params": proj.parameters()})

it = range(args.steps)
if args.bar and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", dynamic_ncols=False, ncols=90, file=sys.stderr)

hidden = None
t0 = time.time()
for step in it:
    if args.bug == "bptt":
        g = torch.Generator().manual_seed(step)
        seq = torch.randint(0, 50, (8, 17), generator=g)
        x, y = seq[:, :-1], seq[:, 1:]
        logits, hidden = model(x, hidden)
        loss = F.cross_entropy(logits.reshape(-1, 50), y.reshape(-1))
        # BUG: hidden carried over without .detach() once past warmup
        if not bug_here(step):
            hidden = hidden.detach()
        opt.zero_grad()
        loss.backward()
        opt.step()
    elif args.bug == "inference_cache":
        x, y = batch(step)
        feats = frozen_cache[step]
        x = x + proj(feats) if bug_here(step) else x + proj(feats.clone())
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    else:
        x, y = batch(step)
        ip = args.bug == "inplace" and bug_here(step)
        logits = model(x, inplace_residual=ip)
        if args.bug == "nonscalar" and bug_here(step):
            loss = F.cross_entropy(logits, y, reduction="none")
        elif args.bug == "custom_fn" and bug_here(step):
            logits = ClampGrad.apply(logits, -3.0, 3.0)
            loss = F.cross_entropy(logits, y)
        elif args.bug == "two_losses" and bug_here(step):
            ce = F.cross_entropy(logits, y)
            reg = logits.pow(2).mean()
            loss = ce + 0.01 * reg
        else:
            loss = F.cross_entropy(logits, y)
        opt.zero_grad()
        if args.bug == "two_losses" and bug_here(step):
            # log the regulariser gradient norm separately, then train on the total
            ce.backward()
            loss.backward()
        else:
            loss.backward()
        opt.step()
        if ema is not None and bug_here(step):
            # EMA of weights, "into" the live model every 5 steps for eval
            for k, p in core.named_parameters():
                ema[k].mul_(0.99).add_(p.detach(), alpha=0.01)
            if step % 5 == 0:
                for k, p in core.named_parameters():
                    p.copy_(ema[k])
    if step % 5 == 0 or step == args.steps - 1:
        lv = loss.item() if loss.dim() == 0 else loss.mean().item()
        msg = f"step {step:4d} | loss {lv:.4f} | lr {opt.param_groups[0]['lr']:.2e} | {(time.time()-t0)*1000/(step+1):.1f} ms/it"
        if args.bar and rank == 0:
            it.write(msg)
        elif world == 1 or rank == 0 or args.out_style == "logging":
            say(msg)

say(f"rank {rank}: training finished, final loss {loss.mean().item():.4f}")
cleanup()
