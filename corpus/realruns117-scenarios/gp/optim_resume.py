"""Train / checkpoint / resume loop with optimizer + scheduler state."""
import argparse, os, sys, time
import torch, torch.nn as nn, torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import setup_logging, init_dist, cleanup

ap = argparse.ArgumentParser()
ap.add_argument("--ckpt-dir", default="ckpt")
ap.add_argument("--resume", default="")
ap.add_argument("--groups", default="single")   # single | decay_split
ap.add_argument("--extra-head", action="store_true")
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--steps-per-epoch", type=int, default=8)
ap.add_argument("--sched-epoch-arg", action="store_true")
ap.add_argument("--out-style", default="print")
args = ap.parse_args()


class Classifier(nn.Module):
    def __init__(self, extra_head=False):
        super().__init__()
        self.backbone = nn.Sequential(nn.Linear(20, 64), nn.LayerNorm(64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 5)
        self.aux = nn.Linear(64, 2) if extra_head else None
    def forward(self, x):
        h = self.backbone(x)
        return self.head(h), (self.aux(h) if self.aux is not None else None)


def param_groups(m, kind):
    if kind == "single":
        return [{"params": [p for p in m.parameters()], "weight_decay": 0.01}]
    decay, no_decay = [], []
    for n, p in m.named_parameters():
        (no_decay if n.endswith("bias") or "1.weight" in n else decay).append(p)
    return [{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}]


def main():
    torch.manual_seed(0)
    rank, world = init_dist()
    say = setup_logging(args.out_style)
    model = Classifier(args.extra_head)
    opt = torch.optim.AdamW(param_groups(model, args.groups), lr=1e-3)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
    start_epoch = 0
    if args.resume:
        say(f"rank {rank}: resuming from {args.resume}")
        ck = torch.load(args.resume, map_location="cpu")
        missing, unexpected = model.load_state_dict(ck["model"], strict=False)
        if missing:
            say(f"rank {rank}: newly initialised (not in checkpoint): {missing}")
        opt.load_state_dict(ck["optimizer"])
        sched.load_state_dict(ck["scheduler"])
        start_epoch = ck["epoch"] + 1
        say(f"rank {rank}: resumed at epoch {start_epoch}, lr {sched.get_last_lr()[0]:.2e}")
    if world > 1:
        model = DDP(model, find_unused_parameters=False)
    for epoch in range(start_epoch, start_epoch + args.epochs):
        tot = 0.0
        for step in range(args.steps_per_epoch):
            g = torch.Generator().manual_seed(epoch * 1000 + step * 10 + rank)
            x = torch.randn(32, 20, generator=g)
            y = x[:, :5].argmax(1)
            logits, aux = model(x)
            loss = F.cross_entropy(logits, y)
            if aux is not None:
                loss = loss + 0.1 * F.cross_entropy(aux, (x[:, 0] > 0).long())
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item()
        if args.sched_epoch_arg:
            sched.step(epoch + 1)
        else:
            sched.step()
        say(f"rank {rank}: epoch {epoch} avg_loss {tot/args.steps_per_epoch:.4f} lr {sched.get_last_lr()[0]:.2e}")
        if rank == 0:
            os.makedirs(args.ckpt_dir, exist_ok=True)
            core = model.module if world > 1 else model
            torch.save({"model": core.state_dict(), "optimizer": opt.state_dict(),
                        "scheduler": sched.state_dict(), "epoch": epoch},
                       os.path.join(args.ckpt_dir, f"epoch{epoch}.pt"))
    say(f"rank {rank}: done")
    cleanup()


if __name__ == "__main__":
    main()
