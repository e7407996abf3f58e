"""FSDP2 training with torch.distributed.checkpoint save/resume (CPU/gloo)."""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict, StateDictOptions
from torch.distributed.fsdp import fully_shard
from torch.distributed.device_mesh import init_device_mesh

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=6)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--layers", type=int, default=2)
p.add_argument("--save-dir", default="")
p.add_argument("--save-every", type=int, default=3)
p.add_argument("--resume", default="")
p.add_argument("--nodecay-groups", action="store_true", help="split params into decay / no-decay groups")
p.add_argument("--optim", default="adamw")
p.add_argument("--logfile", default="")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | rank%(rank)s | %(message)s")
class RF(logging.Filter):
    def filter(self, r):
        r.rank = os.environ.get("RANK", "?"); return True
log = logging.getLogger("train")
for _h in logging.getLogger().handlers: _h.addFilter(RF())

class MLPBlock(nn.Module):
    def __init__(s, d):
        super().__init__(); s.norm = nn.LayerNorm(d); s.up = nn.Linear(d, 4 * d); s.down = nn.Linear(4 * d, d)
    def forward(s, x): return x + s.down(F.gelu(s.up(s.norm(x))))

class Net(nn.Module):
    def __init__(s, d, L, V=300):
        super().__init__(); s.emb = nn.Embedding(V, d); s.layers = nn.ModuleList(MLPBlock(d) for _ in range(L))
        s.norm = nn.LayerNorm(d); s.head = nn.Linear(d, V)
    def forward(s, x):
        h = s.emb(x)
        for l in s.layers: h = l(h)
        return s.head(s.norm(h))

def build_opt(model):
    if args.nodecay_groups:
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2]
        nod = [p for n, p in model.named_parameters() if p.ndim < 2]
        groups = [{"params": decay, "weight_decay": 0.1}, {"params": nod, "weight_decay": 0.0}]
    else:
        groups = [{"params": list(model.parameters()), "weight_decay": 0.1}]
    if args.optim == "sgd":
        return torch.optim.SGD(groups, lr=1e-2, momentum=0.9)
    return torch.optim.AdamW(groups, lr=1e-3)

def main():
    dist.init_process_group("gloo", timeout=timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
    mesh = init_device_mesh("cpu", (world,))
    torch.manual_seed(0)
    model = Net(args.dim, args.layers)
    for l in model.layers: fully_shard(l, mesh=mesh)
    fully_shard(model, mesh=mesh)
    opt = build_opt(model)
    start = 0
    if args.resume:
        log.info(f"resuming from {args.resume} (world_size={world})")
        msd, osd = get_state_dict(model, opt)
        state = {"model": msd, "optim": osd, "step": torch.tensor(0)}
        dcp.load(state, checkpoint_id=args.resume)
        set_state_dict(model, opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        start = int(state["step"]) + 1
        log.info(f"resumed at step {start}")
    g = torch.Generator().manual_seed(7 + rank)
    for step in range(start, start + args.steps):
        x = torch.randint(0, 300, (8, 16), generator=g)
        loss = F.cross_entropy(model(x).reshape(-1, 300), torch.roll(x, -1, 1).reshape(-1))
        loss.backward(); opt.step(); opt.zero_grad()
        if rank == 0: log.info(f"step={step} loss={loss.item():.4f}")
        if args.save_dir and (step + 1) % args.save_every == 0:
            msd, osd = get_state_dict(model, opt)
            path = os.path.join(args.save_dir, f"step_{step:06d}")
            t = time.time()
            dcp.save({"model": msd, "optim": osd, "step": torch.tensor(step)}, checkpoint_id=path)
            if rank == 0: log.info(f"saved checkpoint {path} in {time.time()-t:.2f}s")
    dist.barrier()
    if rank == 0: log.info("training complete")
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
