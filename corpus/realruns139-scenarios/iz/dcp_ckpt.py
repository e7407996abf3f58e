"""MLP regressor sharded with FSDP2, checkpointed with torch.distributed.checkpoint (DCP); resume/reshard."""
import argparse, logging, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard
from torch.distributed.device_mesh import init_device_mesh

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--layers", type=int, default=3)
p.add_argument("--steps", type=int, default=6)
p.add_argument("--save-every", type=int, default=3)
p.add_argument("--ckpt-dir", default="ckpt")
p.add_argument("--resume-from", default="")
p.add_argument("--nodecay-group", action="store_true")
p.add_argument("--data-dir", default="")
p.add_argument("--barrier", action="store_true")
p.add_argument("--pg-timeout", type=int, default=30)
a = p.parse_args()

rank = int(os.environ["RANK"]); world = int(os.environ["WORLD_SIZE"])
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [rank {rank}/{world}] %(message)s")
log = logging.getLogger(__name__)
dist.init_process_group("gloo", timeout=timedelta(seconds=a.pg_timeout))
mesh = init_device_mesh("cpu", (world,))

class Net(nn.Module):
    def __init__(s, d, L):
        super().__init__()
        s.inp = nn.Linear(16, d)
        s.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU()) for _ in range(L)])
        s.out = nn.Linear(d, 1)
    def forward(s, x):
        h = s.inp(x)
        for b in s.blocks: h = h + b(h)
        return s.out(h).squeeze(-1)

torch.manual_seed(0)
model = Net(a.hidden, a.layers)
for b in model.blocks: fully_shard(b, mesh=mesh)
fully_shard(model, mesh=mesh)
if a.nodecay_group:
    decay = [p for n, p in model.named_parameters() if p.dim() >= 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05}, {"params": nodecay, "weight_decay": 0.0}], lr=1e-3)
else:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.05)
log.info("model sharded over %d ranks, %d params", world, sum(p.numel() for p in model.parameters()))

start = 0
if a.resume_from:
    msd, osd = get_state_dict(model, opt)
    state = {"model": msd, "optim": osd, "step": torch.tensor(0)}
    log.info("resuming from %s", a.resume_from)
    dcp.load(state, checkpoint_id=a.resume_from)
    set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
    start = int(state["step"]) + 1
    log.info("resumed at step %d", start)

if a.data_dir:
    path = os.path.join(a.data_dir, f"shard_{rank:02d}.pt")
    log.info("loading data shard %s", path)
    with open(path, "rb") as f:
        x, y = torch.load(f)
else:
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(256, 16, generator=g); y = x[:, :4].sum(-1) + 0.1 * torch.randn(256, generator=g)

for step in range(start, start + a.steps):
    i = (step * 32) % 256
    loss = nn.functional.mse_loss(model(x[i:i + 32]), y[i:i + 32])
    loss.backward(); opt.step(); opt.zero_grad()
    l = loss.detach().clone(); dist.all_reduce(l); l /= world
    if rank == 0: log.info("step %d  mse %.4f", step, l.item())
    if (step + 1) % a.save_every == 0:
        msd, osd = get_state_dict(model, opt)
        cid = os.path.join(a.ckpt_dir, f"step_{step:04d}")
        t = time.time()
        dcp.save({"model": msd, "optim": osd, "step": torch.tensor(step)}, checkpoint_id=cid)
        if rank == 0: log.info("saved DCP checkpoint %s in %.2fs", cid, time.time() - t)
if a.barrier:
    dist.monitored_barrier(timeout=timedelta(seconds=10), wait_all_ranks=True)
log.info("done")
dist.destroy_process_group()
