"""Hand-written data parallelism with plain torch.distributed collectives:
broadcast initial weights, all_reduce gradients, all_gather eval predictions."""
import argparse, os, time
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=40)
p.add_argument("--eval-n", type=int, default=64, help="eval samples in the full eval set")
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--noisy", action="store_true")
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(1234 + rank)
model = nn.Sequential(nn.Linear(20, 64), nn.Tanh(), nn.Linear(64, 3))
for p_ in model.parameters():
    dist.broadcast(p_.data, src=0)
opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
W = torch.randn(20, 3, generator=torch.Generator().manual_seed(7))
for step in range(1, args.steps + 1):
    x = torch.randn(32, 20); y = (x @ W).argmax(1)
    loss = F.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward()
    for p_ in model.parameters():
        dist.all_reduce(p_.grad); p_.grad /= world
    opt.step()
    if step % 10 == 0:
        print(f"rank {rank} | step {step:4d} | loss {loss.item():.4f}", flush=True)

# evaluation: every rank scores its slice of the eval set, rank 0 collects the predictions
g = torch.Generator().manual_seed(99)
xe = torch.randn(args.eval_n, 20, generator=g)
per = args.eval_n // world
lo = rank * per
hi = args.eval_n if rank == world - 1 else lo + per       # last rank takes the remainder
with torch.no_grad():
    pred = model(xe[lo:hi]).argmax(1).float()
print(f"rank {rank} | eval slice [{lo}:{hi}] -> {pred.numel()} predictions", flush=True)
gathered = [torch.empty(per) for _ in range(world)]
dist.all_gather(gathered, pred)
if rank == 0:
    allp = torch.cat(gathered)
    acc = (allp == (xe @ W).argmax(1)[: allp.numel()].float()).float().mean()
    print(f"eval accuracy {acc.item():.3f} on {allp.numel()} samples", flush=True)
dist.barrier()
dist.destroy_process_group()
