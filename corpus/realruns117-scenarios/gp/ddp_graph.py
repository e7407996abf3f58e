"""DDP trainer with weight sharing, activation checkpointing and optional branches."""
import argparse, os, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup_logging, init_dist, cleanup

ap = argparse.ArgumentParser()
ap.add_argument("--variant", default="plain")   # shared_ckpt | skip_branch | plain
ap.add_argument("--find-unused", action="store_true")
ap.add_argument("--skip-rank", type=int, default=1)
ap.add_argument("--skip-step", type=int, default=4)
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--out-style", default="print")
ap.add_argument("--pg-timeout", type=int, default=30)
args = ap.parse_args()

torch.manual_seed(0)
rank, world = init_dist(args.pg_timeout)
say = setup_logging(args.out_style)


class SharedEncoder(nn.Module):
    """ALBERT-style: one layer applied N times, with activation checkpointing."""
    def __init__(self, d=32, n=3, ckpt=False):
        super().__init__()
        self.inp = nn.Linear(16, d)
        self.layer = nn.Sequential(nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.n, self.ckpt = n, ckpt
        self.head = nn.Linear(d, 4)
    def forward(self, x, use_image=True):
        h = self.inp(x)
        for _ in range(self.n):
            if self.ckpt:
                h = h + checkpoint(self.layer, h, use_reentrant=True)
            else:
                h = h + self.layer(h)
        return self.head(h)


class TwoTower(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.text = nn.Sequential(nn.Linear(16, d), nn.ReLU(), nn.Linear(d, d))
        self.image = nn.Sequential(nn.Linear(24, d), nn.ReLU(), nn.Linear(d, d))
        self.head = nn.Linear(d, 4)
    def forward(self, text, image=None):
        h = self.text(text)
        if image is not None:
            h = h + self.image(image)
        return self.head(h)


if args.variant == "shared_ckpt":
    model = SharedEncoder(ckpt=True)
elif args.variant == "skip_branch":
    model = TwoTower()
else:
    model = SharedEncoder(ckpt=False)

model = DDP(model, find_unused_parameters=args.find_unused)
say(f"rank {rank}: DDP(find_unused_parameters={args.find_unused}) over {world} ranks, "
    f"{sum(p.numel() for p in model.parameters())} parameters")
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

t0 = time.time()
for step in range(args.steps):
    g = torch.Generator().manual_seed(100 * rank + step)
    x = torch.randn(16, 16, generator=g, requires_grad=False)
    y = torch.randint(0, 4, (16,), generator=g)
    if args.variant == "skip_branch":
        # some shards contain text-only samples (image missing in the manifest)
        text_only = rank == args.skip_rank and step >= args.skip_step
        img = None if text_only else torch.randn(16, 24, generator=g)
        out = model(x, img)
    else:
        out = model(x)
    loss = F.cross_entropy(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 4 == 0 or step == args.steps - 1:
        t = torch.tensor([loss.item()])
        torch.distributed.all_reduce(t)
        if rank == 0 or args.out_style == "logging":
            say(f"epoch 0 step {step:3d}/{args.steps} train_loss {t.item()/world:.4f} ({time.time()-t0:.1f}s)")

say(f"rank {rank}: finished {args.steps} steps")
cleanup()
