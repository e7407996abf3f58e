"""Regression MLP training loop with periodic torch.save checkpoints and --resume."""
import argparse, os, sys, time, dataclasses
import torch, torch.nn as nn
from tqdm import tqdm

@dataclasses.dataclass
class TrainConfig:
    hidden: int = 64
    lr: float = 1e-3
    epochs: int = 3
    batch: int = 32

p = argparse.ArgumentParser()
p.add_argument("--out", default="ckpt")
p.add_argument("--resume", default=None)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--extra-layer", action="store_true", help="v2 model with an extra residual projection")
p.add_argument("--decay-groups", action="store_true", help="separate no-decay param group for biases/norms")
p.add_argument("--save-config-object", action="store_true", help="store the TrainConfig dataclass in the checkpoint")
p.add_argument("--big", type=int, default=0, help="extra embedding table rows (makes checkpoints larger)")
p.add_argument("--dist", action="store_true")
args = p.parse_args()

rank = 0
if args.dist:
    import torch.distributed as dist
    from datetime import timedelta
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    rank = dist.get_rank()

cfg = TrainConfig(hidden=args.hidden, epochs=args.epochs)
torch.manual_seed(0)

class Net(nn.Module):
    def __init__(self, h, extra=False, big=0):
        super().__init__()
        self.inp = nn.Linear(16, h); self.norm = nn.LayerNorm(h); self.out = nn.Linear(h, 1)
        if extra:
            self.proj = nn.Linear(h, h)
        if big:
            self.table = nn.Embedding(big, 256)
        self.extra = extra
    def forward(self, x):
        h = torch.relu(self.norm(self.inp(x)))
        if self.extra:
            h = h + self.proj(h)
        return self.out(h)

model = Net(args.hidden, args.extra_layer, args.big)
if args.decay_groups:
    decay = [p for n, p in model.named_parameters() if p.dim() > 1]
    no_decay = [p for n, p in model.named_parameters() if p.dim() <= 1]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.01}, {"params": no_decay, "weight_decay": 0.0}], lr=cfg.lr)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.01)

X = torch.randn(512, 16); y = (X[:, :4].sum(1, keepdim=True) + 0.1 * torch.randn(512, 1))
start_epoch = 0
if args.resume:
    print(f"[rank{rank}] resuming from {args.resume}", flush=True)
    ck = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    start_epoch = ck["epoch"] + 1
    print(f"[rank{rank}] resumed at epoch {start_epoch}, best_loss={ck.get('best_loss')}", flush=True)

os.makedirs(args.out, exist_ok=True)
best = float("inf")
for epoch in range(start_epoch, start_epoch + cfg.epochs):
    perm = torch.randperm(len(X))
    bar = tqdm(range(0, len(X), cfg.batch), desc=f"epoch {epoch}", disable=rank != 0, mininterval=0, ncols=90)
    tot = 0.0
    for i in bar:
        idx = perm[i:i + cfg.batch]
        loss = nn.functional.mse_loss(model(X[idx]), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        tot += loss.item()
        bar.set_postfix(loss=f"{loss.item():.4f}")
    avg = tot / len(bar)
    best = min(best, avg)
    if rank == 0:
        print(f"epoch {epoch}: train_loss={avg:.4f}", flush=True)
        ck = {"model": model.state_dict(), "optimizer": opt.state_dict(), "epoch": epoch, "best_loss": best}
        if args.save_config_object:
            ck["config"] = cfg
        path = os.path.join(args.out, f"epoch{epoch}.pt")
        torch.save(ck, path)
        torch.save(ck, os.path.join(args.out, "last.pt"))
        print(f"saved checkpoint {path} ({os.path.getsize(path)/1e6:.2f} MB)", flush=True)
    if args.dist:
        dist.barrier()
print(f"[rank{rank}] done", flush=True)
if args.dist:
    dist.destroy_process_group()
