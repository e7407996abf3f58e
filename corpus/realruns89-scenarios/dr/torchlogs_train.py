"""Trainer exercised with TORCH_LOGS / TORCH_CPP_LOG_LEVEL output. Faults: manual gradient all-reduce with a
parameter list that differs on one rank; torch.compile(fullgraph=True) over a data-dependent branch;
DDP with a head that is skipped for some batches."""
import argparse, logging, os, sys, time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--mode", default="ddp", choices=["ddp", "manual_allreduce", "compile"])
p.add_argument("--fault", default="none", choices=["none", "extra_param", "data_branch", "skip_head"])
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=8)
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s | %(levelname)s | rank{rank} | %(message)s")
log = logging.getLogger("tl")

class Net(nn.Module):
    def __init__(self, use_aux_bias=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(24, 48), nn.SiLU(), nn.Linear(48, 48), nn.SiLU())
        self.head = nn.Linear(48, 3)
        self.aux = nn.Linear(48, 1)
        if use_aux_bias:
            self.aux_scale = nn.Parameter(torch.ones(1))
    def forward(self, x, with_aux=True):
        h = self.body(x)
        if args.fault == "data_branch" and h.mean() > 0:  # route "confident" batches through a sharper head
            return self.head(h) * 2.0, None
        out = self.head(h)
        aux = self.aux(h) if with_aux else None
        if aux is not None and hasattr(self, "aux_scale"):
            aux = aux * self.aux_scale
        return out, aux

if args.mode in ("ddp", "manual_allreduce"):
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
torch.manual_seed(0)
net = Net(use_aux_bias=(args.fault == "extra_param" and rank == args.fault_rank))
model = net
if args.mode == "ddp":
    model = nn.parallel.DistributedDataParallel(net)
elif args.mode == "compile":
    model = torch.compile(net, fullgraph=True)
opt = torch.optim.Adam(net.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)
for step in range(args.steps):
    x = torch.randn(16, 24, generator=g); y = torch.randint(0, 3, (16,), generator=g)
    with_aux = not (args.fault == "skip_head" and step % 2 == 1)  # aux loss only on even steps
    out, aux = model(x, with_aux)
    loss = nn.functional.cross_entropy(out, y)
    if aux is not None:
        loss = loss + 0.1 * aux.pow(2).mean()
    opt.zero_grad(); loss.backward()
    if args.mode == "manual_allreduce":
        grads = [p.grad for p in net.parameters() if p.grad is not None]
        flat = torch.cat([g_.reshape(-1) for g_ in grads])
        dist.all_reduce(flat); flat /= world
        off = 0
        for g_ in grads:
            g_.copy_(flat[off:off + g_.numel()].view_as(g_)); off += g_.numel()
    opt.step()
    log.info("step %d loss %.4f", step, loss.item())
if dist.is_initialized():
    dist.barrier(); dist.destroy_process_group()
log.info("done")
