"""Toy mixture-of-experts layer: tokens routed to the expert owned by each rank with all_to_all_single."""
import argparse, os, sys, time
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "no-count-exchange", "capacity-drop"])
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--at-step", type=int, default=3)
a = p.parse_args()
dist.init_process_group("gloo", timeout=timedelta(seconds=20))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(rank)
D = 32
router = nn.Linear(D, world)
expert = nn.Sequential(nn.Linear(D, 64), nn.GELU(), nn.Linear(64, D))
for p_ in router.parameters(): dist.broadcast(p_.data, 0)
opt = torch.optim.SGD(list(router.parameters()) + list(expert.parameters()), lr=0.01)

for step in range(a.steps):
    x = torch.randn(64, D)
    dest = router(x).argmax(-1)
    order = dest.argsort()
    send = x[order]
    in_splits = torch.bincount(dest, minlength=world)
    out_splits = torch.empty_like(in_splits)
    if a.fault == "no-count-exchange" and step >= a.at_step and rank == a.bad_rank:
        # "fast path": assume a balanced router, skip the count exchange
        out_splits = torch.full((world,), 64 // world, dtype=in_splits.dtype)
    else:
        dist.all_to_all_single(out_splits, in_splits)
    recv = torch.empty(int(out_splits.sum()), D)
    dist.all_to_all_single(recv, send.detach(), out_splits.tolist(), in_splits.tolist())
    y = expert(recv)
    back = torch.empty(64, D)
    dist.all_to_all_single(back, y.detach(), in_splits.tolist(), out_splits.tolist())
    loss = (y ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"rank {rank} step {step} routed {in_splits.tolist()} received {out_splits.tolist()} loss {loss.item():.4f}", flush=True)
dist.barrier()
print(f"rank {rank} done", flush=True)
dist.destroy_process_group()
