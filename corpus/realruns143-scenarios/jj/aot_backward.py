"""Compiled critic/regressor training whose faults surface in backward (AOTAutograd)."""
import argparse, os, sys, time, logging, datetime
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "grad-penalty", "aux-backward", "inplace-out", "detach-head"])
p.add_argument("--fault-rank", type=int, default=-1)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--fmt", default="plain", choices=["plain", "logging"])
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if world > 1:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
if args.fmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s | %(levelname)-7s | rank={rank} | %(message)s")
log = logging.getLogger("wgan")
def say(m):
    if args.fmt == "logging": log.info(m)
    else: print(f"[rank{rank}] {m}" if world > 1 else m, flush=True)

critic = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 64), nn.Tanh(), nn.Linear(64, 1))
gen = nn.Sequential(nn.Linear(8, 64), nn.ReLU(), nn.Linear(64, 16))
if world > 1:
    from torch.nn.parallel import DistributedDataParallel as DDP
    critic = DDP(critic); gen = DDP(gen)
ccritic = torch.compile(critic)
cgen = torch.compile(gen)
opt_c = torch.optim.Adam(critic.parameters(), lr=1e-4, betas=(0.5, 0.9))
opt_g = torch.optim.Adam(gen.parameters(), lr=1e-4, betas=(0.5, 0.9))
g = torch.Generator().manual_seed(rank)
faulty_rank = args.fault_rank < 0 or args.fault_rank == rank
say(f"WGAN training, compiled critic+generator, world={world}")
for step in range(args.steps):
    fault = args.fault if (faulty_rank and step >= args.fault_step) else "none"
    real = torch.randn(32, 16, generator=g) * 0.5 + 1.0
    z = torch.randn(32, 8, generator=g)
    fake = cgen(z).detach()
    # critic update
    d_real = ccritic(real).mean(); d_fake = ccritic(fake).mean()
    loss_c = d_fake - d_real
    if fault == "grad-penalty":
        alpha = torch.rand(32, 1, generator=g)
        interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        score = ccritic(interp)
        grads = torch.autograd.grad(score.sum(), interp, create_graph=True)[0]
        gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
        loss_c = loss_c + 10.0 * gp
    opt_c.zero_grad(); loss_c.backward(); opt_c.step()
    # generator update
    out = ccritic(cgen(z))
    if fault == "inplace-out":
        out.clamp_(-5, 5)                       # clip critic scores in place
    loss_g = -out.mean()
    opt_g.zero_grad()
    if fault == "aux-backward":
        feat_loss = out.pow(2).mean() * 1e-3     # auxiliary regulariser, backpropagated separately
        loss_g.backward()
        feat_loss.backward()
    else:
        loss_g.backward()
    opt_g.step()
    say(f"step {step} loss_c {loss_c.item():+.4f} loss_g {loss_g.item():+.4f}")
say("finished")
if world > 1:
    dist.barrier(); dist.destroy_process_group()
