"""DDP + ZeroRedundancyOptimizer (optimizer state sharded across ranks), gloo/CPU.

--fault none              : healthy; consolidate on all ranks, rank 0 saves
--fault consolidate_rank0 : only rank 0 calls consolidate_state_dict() (inside `if rank == 0`)
--fault no_consolidate    : rank 0 calls optimizer.state_dict() without consolidating first
--fault load_other_world  : load a consolidated state saved by a different world size
"""
import argparse
import datetime
import logging
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--save-every", type=int, default=10)
p.add_argument("--ckpt", default="/work/rr86/db/tmp/zero_ckpt")
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--optim", default="adamw")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=args.timeout))
rank, world = dist.get_rank(), dist.get_world_size()
log = logging.getLogger(f"zero.rank{rank}")
torch.manual_seed(0)

model = nn.Sequential(nn.Linear(32, 128), nn.Tanh(), nn.Linear(128, 128), nn.Tanh(), nn.Linear(128, 10))
ddp = DDP(model)
optim_cls = {"adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}[args.optim]
opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=optim_cls, lr=1e-3,
                              parameters_as_bucket_view=False)
log.info("ZeroRedundancyOptimizer: world=%d local params=%d of %d", world,
         sum(p.numel() for g in opt.optim.param_groups for p in g["params"]),
         sum(p.numel() for p in model.parameters()))
os.makedirs(args.ckpt, exist_ok=True)

if args.fault == "load_other_world":
    path = os.path.join(args.ckpt, "optim_full.pt")
    log.info("loading consolidated optimizer state from %s", path)
    opt.load_state_dict(torch.load(path, map_location="cpu"))

g = torch.Generator().manual_seed(rank)
t0 = time.time()
for step in range(1, args.steps + 1):
    x = torch.randn(64, 32, generator=g)
    y = (x[:, :10] * 3).argmax(1)
    loss = nn.functional.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 5 == 0 and rank == 0:
        log.info("step %d loss %.4f %.1f ms/step", step, loss.item(), 1000 * (time.time() - t0) / step)
    if step % args.save_every == 0:
        path = os.path.join(args.ckpt, "optim_full.pt")
        if args.fault == "consolidate_rank0":
            if rank == 0:
                opt.consolidate_state_dict(to=0)
                torch.save(opt.state_dict(), path)
                log.info("saved optimizer state to %s", path)
        elif args.fault == "no_consolidate":
            if rank == 0:
                torch.save(opt.state_dict(), path)
                log.info("saved optimizer state to %s", path)
        else:
            opt.consolidate_state_dict(to=0)
            if rank == 0:
                torch.save(opt.state_dict(), path)
                log.info("saved optimizer state to %s", path)
dist.barrier()
log.info("done in %.1fs", time.time() - t0)
dist.destroy_process_group()
