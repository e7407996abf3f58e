"""Resume a tiny DDP regression model from a node-local checkpoint copy, then keep training.

--make-ckpt writes the initial checkpoint (single process). Each node reads
<ckpt-root>/<node-name>/last.pt, where node-name comes from --node-name (set per host).
"""
import argparse
import argparse as _ap
import logging
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--make-ckpt", default="")
p.add_argument("--ckpt-root", default="ckpt")
p.add_argument("--node-name", default="node01")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--extra-layer", action="store_true", help="model code v2 (adds a residual block)")
p.add_argument("--save-args", action="store_true", help="store the argparse namespace in the checkpoint")
p.add_argument("--steps", type=int, default=30)
p.add_argument("--timeout-s", type=int, default=30)
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
                    stream=sys.stdout)
log = logging.getLogger("resume")


def build():
    layers = [nn.Linear(16, args.hidden), nn.GELU(), nn.Linear(args.hidden, args.hidden), nn.GELU()]
    if args.extra_layer:
        layers += [nn.Linear(args.hidden, args.hidden), nn.GELU()]
    layers += [nn.Linear(args.hidden, 1)]
    return nn.Sequential(*layers)


if args.make_ckpt:
    torch.manual_seed(0)
    m = build()
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    ck = {"model": m.state_dict(), "optimizer": opt.state_dict(), "step": 1200}
    if args.save_args:
        ck["args"] = args
    torch.save(ck, args.make_ckpt)
    print("wrote", args.make_ckpt, os.path.getsize(args.make_ckpt), "bytes")
    sys.exit(0)

dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout_s))
rank, world = dist.get_rank(), dist.get_world_size()
log.info("rank %d/%d on %s starting (torch %s)", rank, world, args.node_name, torch.__version__)
model = build()
ckpt_path = os.path.join(args.ckpt_root, args.node_name, "last.pt")
log.info("rank %d: resuming from %s", rank, ckpt_path)
state = torch.load(ckpt_path, map_location="cpu")
model.load_state_dict(state["model"])
start = state["step"]
ddp = DDP(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
opt.load_state_dict(state["optimizer"])
log.info("rank %d: resumed at step %d", rank, start)
g = torch.Generator().manual_seed(rank)
for step in range(start, start + args.steps):
    x = torch.randn(32, 16, generator=g)
    y = x[:, :4].sum(1, keepdim=True)
    loss = nn.functional.mse_loss(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0 and rank == 0:
        log.info("step %d loss %.4f", step, loss.item())
    time.sleep(0.05)
dist.barrier()
log.info("rank %d done", rank)
dist.destroy_process_group()
