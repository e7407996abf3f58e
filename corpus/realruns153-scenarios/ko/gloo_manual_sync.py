"""Bag-of-words regression trained with hand-written gradient averaging over gloo (no DDP).

Rank 0 broadcasts the feature vocabulary (token ids) it read from the vocab file; every rank sizes
its receive buffer from its own copy of the vocab file. Metrics are averaged with all_reduce.
usage: torchrun ... gloo_manual_sync.py --vocab-dir D --steps N [--skip-empty-metric]
"""
import argparse, os, sys, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--vocab-dir", required=True)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--pg-timeout", type=int, default=15)
p.add_argument("--metric-every", type=int, default=10)
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s %(levelname)s [r{rank}] %(message)s")
log = logging.getLogger("sync")

vocab_file = os.path.join(args.vocab_dir, f"vocab.node{rank}.txt")
words = [w for w in open(vocab_file).read().split("\n") if w]
ids = torch.arange(len(words), dtype=torch.int64) if rank == 0 else torch.empty(len(words), dtype=torch.int64)
log.info("local vocab %s: %d entries", vocab_file, len(words))
dist.broadcast(ids, src=0)
V = ids.numel()
torch.manual_seed(0)
model = nn.Linear(V, 1)
for prm in model.parameters():
    dist.broadcast(prm.data, src=0)
opt = torch.optim.SGD(model.parameters(), lr=0.05)
g = torch.Generator().manual_seed(rank)
for step in range(1, args.steps + 1):
    x = torch.rand(32, V, generator=g); y = x[:, :5].sum(1, keepdim=True)
    loss = nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward()
    for prm in model.parameters():
        dist.all_reduce(prm.grad); prm.grad /= world
    if os.environ.get("LOG_GRAD_NORM") == "1":
        # global grad-norm for the debug dashboard
        gn = torch.stack([p_.grad.norm() for p_ in model.parameters()]).norm().reshape(1)
        dist.all_reduce(gn)
        log.info("step %d global grad norm %.4f", step, gn.item())
    opt.step()
    time.sleep(0.03)
    if step % args.metric_every == 0:
        t = torch.tensor([loss.item()]); dist.all_reduce(t)
        log.info("step %d mean loss %.4f", step, t.item() / world)
log.info("done")
dist.destroy_process_group()
