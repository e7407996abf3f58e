"""Plain torch DDP trainer (gloo/CPU). --fault selects a real bug/misconfig on --bad-rank at --bad-step."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--ckpt", default="")
p.add_argument("--resume", default="")
p.add_argument("--logfmt", action="store_true")
p.add_argument("--sleep", type=float, default=0.2)
p.add_argument("--shard-dir", default="")
a = p.parse_args()

if a.logfmt:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
else:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
log = logging.getLogger("train")

dist.init_process_group("gloo", init_method="env://", timeout=timedelta(seconds=25))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)

hidden = a.hidden
if a.fault == "model-mismatch" and rank == a.bad_rank:
    # per-node config file drifted: this rank reads an older width
    hidden = int(os.environ.get("MODEL_HIDDEN", hidden))

model = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 4))
if a.resume:
    sd = torch.load(a.resume, map_location="cpu")
    model.load_state_dict(sd["model"])
    log.info(f"[rank{rank}] resumed from {a.resume} (step {sd.get('step')})")
ddp = DDP(model, find_unused_parameters=(a.fault == "unused-warn"))
opt = torch.optim.SGD(ddp.parameters(), lr=a.lr)
lossf = nn.CrossEntropyLoss()
g = torch.Generator().manual_seed(100 + rank)
if a.shard_dir:
    shard = torch.load(os.path.join(a.shard_dir, f"shard-{rank:03d}.pt"))
    log.info(f"[rank{rank}] loaded {len(shard)} samples")
for step in range(1, a.steps + 1):
    x = torch.randn(32, 16, generator=g)
    y = torch.randint(0, 4, (32,), generator=g)
    if a.fault == "nan-input" and rank == a.bad_rank and step >= a.bad_step:
        x[5, 3] = float("inf")  # a corrupt feature value from this rank's shard
    out = ddp(x)
    loss = lossf(out, y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    # metrics: average loss across ranks
    t = loss.detach().clone()
    if a.fault == "metric-shape" and rank == a.bad_rank and step == a.bad_step:
        t = torch.stack([loss.detach(), out.detach().argmax(1).eq(y).float().mean()])
    dist.all_reduce(t)
    avg = t / world
    if rank == 0:
        log.info(f"step {step}/{a.steps} loss {avg.mean().item():.4f} lr {a.lr}")
    if a.fault == "nan-input" and not torch.isfinite(avg).all():
        raise FloatingPointError(f"[rank{rank}] non-finite loss {avg.item()} at step {step}; stopping")
    if a.ckpt and rank == 0 and step % 4 == 0:
        os.makedirs(os.path.dirname(a.ckpt) or ".", exist_ok=True)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step}, a.ckpt)
        log.info(f"saved checkpoint {a.ckpt}")
    time.sleep(a.sleep)
dist.barrier()
if rank == 0:
    log.info("training complete")
dist.destroy_process_group()
