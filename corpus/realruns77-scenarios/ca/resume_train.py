"""Script family: train / save / resume a small model; run under IPython (%run) or torchrun.
--fault {none,weights_only,module_prefix,optim_groups,lfs_init,truncated_resume,disk_full,perm}
Works single-process or under torchrun (gloo)."""
import argparse, os, sys, time, datetime, logging
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--fault", default="none")
ap.add_argument("--ckpt-dir", default="ckpt")
ap.add_argument("--init-from", default=None)
ap.add_argument("--resume", default=None)
ap.add_argument("--epochs", type=int, default=3)
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--lr", type=float, default=1e-3)
ap.add_argument("--wd", type=float, default=0.01)
ap.add_argument("--ddp", action="store_true")
ap.add_argument("--log", "--log-ts", dest="log", action="store_true")
args = ap.parse_args()

if args.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s: %(message)s")
log = logging.getLogger("resume_train")
say = log.info if args.log else print

distributed = args.ddp or "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank = dist.get_rank() if distributed else 0
world = dist.get_world_size() if distributed else 1

class Encoder(nn.Module):
    def __init__(self, d=48, layers=2):
        super().__init__()
        self.inp = nn.Linear(16, d)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU()) for _ in range(layers))
        self.head = nn.Linear(d, 5)
    def forward(self, x):
        h = self.inp(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(h)

torch.manual_seed(0)
model = Encoder()
if args.init_from:
    say(f"initialising encoder from {args.init_from}")
    sd = torch.load(args.init_from, map_location="cpu")
    model.load_state_dict(sd)

if args.fault == "optim_groups":
    # exclude norms/biases from weight decay (added after the checkpoint was written)
    decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
    no_decay = [p for n, p in model.named_parameters() if p.ndim < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": args.wd}, {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.wd)

net = nn.parallel.DistributedDataParallel(model) if distributed else model
start_epoch = 0
if args.resume:
    say(f"resuming from {args.resume}")
    ck = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(ck["model"])
    opt.load_state_dict(ck["optimizer"])
    start_epoch = ck["epoch"] + 1
    say(f"resumed at epoch {start_epoch}")

os.makedirs(args.ckpt_dir, exist_ok=True)
g = torch.Generator().manual_seed(rank)
W = torch.randn(16, 5, generator=torch.Generator().manual_seed(7))
for epoch in range(start_epoch, start_epoch + args.epochs):
    tot = 0.0
    for step in range(args.steps):
        x = torch.randn(32, 16, generator=g)
        y = (x @ W).argmax(-1)
        loss = F.cross_entropy(net(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        tot += loss.item()
    say(f"[rank {rank}] epoch {epoch} loss {tot/args.steps:.4f}")
    if rank == 0:
        sd = net.state_dict() if args.fault == "module_prefix" else model.state_dict()
        ck = {"model": sd, "optimizer": opt.state_dict(), "epoch": epoch}
        if args.fault == "weights_only":
            ck["args"] = args              # keep the run config next to the weights
        # keep several snapshots plus a "last" copy
        path = os.path.join(args.ckpt_dir, f"epoch{epoch:03d}.pt")
        torch.save(ck, path)
        torch.save(ck, os.path.join(args.ckpt_dir, "last.pt"))
        say(f"saved {path} ({os.path.getsize(path)/1e3:.1f} kB)")
    if distributed:
        dist.barrier()
if distributed:
    dist.destroy_process_group()
say("done")
