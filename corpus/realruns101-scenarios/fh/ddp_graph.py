"""DDP graph-shape scenarios: unused params, reentrant checkpointing, model mismatch, grad accumulation with no_sync."""
import argparse, os, sys, time, logging, contextlib
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--accum", type=int, default=4)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--static-graph", action="store_true")
p.add_argument("--ckpt", default="off", choices=["off", "reentrant", "nonreentrant"])
p.add_argument("--logfmt", default="print", choices=["print", "logging"])
p.add_argument("--pg-timeout", type=int, default=30)
a = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
if a.logfmt == "logging":
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    log = lambda m: print(f"[rank{rank}] {m}", flush=True)

hidden = a.hidden
if a.fault == "model_mismatch" and rank == a.fault_rank:
    # config read from a stale yaml on this rank in real life; here: env override left on one node
    hidden = int(os.environ.get("HIDDEN_OVERRIDE", a.hidden + 32))

class Block(nn.Module):
    def __init__(s, h):
        super().__init__(); s.fc1 = nn.Linear(h, 4 * h); s.fc2 = nn.Linear(4 * h, h); s.ln = nn.LayerNorm(h)
    def forward(s, x):
        return x + s.fc2(F.gelu(s.fc1(s.ln(x))))

class Net(nn.Module):
    def __init__(s, h, ckpt):
        super().__init__()
        s.inp = nn.Linear(16, h); s.blocks = nn.ModuleList([Block(h) for _ in range(3)])
        s.head = nn.Linear(h, 4); s.aux_head = nn.Linear(h, 4); s.ckpt = ckpt
    def forward(s, x, use_aux=True):
        h = s.inp(x)
        for b in s.blocks:
            if s.ckpt == "reentrant":
                h = checkpoint(b, h, use_reentrant=True)
            elif s.ckpt == "nonreentrant":
                h = checkpoint(b, h, use_reentrant=False)
            else:
                h = b(h)
        out = s.head(h)
        if use_aux:
            out = out + 0.1 * s.aux_head(h)
        return out

torch.manual_seed(0)
model = Net(hidden, a.ckpt)
if a.fault == "freeze_rank" and rank == a.fault_rank:
    # "freeze input projection for the first epoch" read from a per-node config on this rank only
    for p_ in model.inp.parameters():
        p_.requires_grad_(False)
log(f"model params: {sum(p.numel() for p in model.parameters())}, world={world}")
ddp = DDP(model, find_unused_parameters=a.find_unused, static_graph=a.static_graph)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)

g = torch.Generator().manual_seed(100 + rank)
n_batches = a.steps * a.accum
if a.fault == "accum_uneven" and rank == a.fault_rank:
    # this rank's shard is shorter (len(dataset) not divisible, drop_last=False on a custom sampler)
    n_batches = a.steps * a.accum - a.accum // 2 - 1
data = [(torch.randn(8, 16, generator=g), torch.randint(0, 4, (8,), generator=g)) for _ in range(n_batches)]

step = 0
for i, (x, y) in enumerate(data):
    use_aux = True
    if a.fault == "unused" and rank == a.fault_rank and step >= a.fault_step:
        use_aux = False  # aux loss disabled after warmup on this rank (curriculum flag)
    if a.fault == "unused_all" and step >= a.fault_step:
        use_aux = False
    sync_now = (i + 1) % a.accum == 0 or a.accum == 1
    ctx = ddp.no_sync() if (a.accum > 1 and not sync_now) else contextlib.nullcontext()
    with ctx:
        out = ddp(x, use_aux=use_aux)
        loss = F.cross_entropy(out, y) / a.accum
        loss.backward()
    if sync_now:
        opt.step(); opt.zero_grad(set_to_none=True)
        lt = loss.detach() * a.accum
        dist.all_reduce(lt); lt /= world
        log(f"step {step} loss {lt.item():.4f}")
        step += 1
# last partial accumulation window
if len(data) % a.accum:
    opt.step(); opt.zero_grad()
    log("flushed partial accumulation window")
stats = torch.tensor([float(step), float(len(data))])
dist.all_reduce(stats)
log(f"done: steps={step} stats={stats.tolist()}")
dist.barrier()
dist.destroy_process_group()
