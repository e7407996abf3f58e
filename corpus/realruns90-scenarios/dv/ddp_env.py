"""Small DDP training job used for environment / launch-configuration faults.

--fault selects the misconfiguration:
  none          healthy run
  nccl          backend taken from config (nccl) on a CPU-only build
  set-device    torch.cuda.set_device(local_rank) before init (copied GPU recipe)
  cuda-batch    on --fault-rank, at --fault-step the batch is moved to args.device ('cuda')
  lib-ema       EMA helper from 'library' allocates its shadow weights with .cuda() on --fault-rank
  double-init   a helper re-initialises the default process group after the trainer already did
  world-size    init_process_group gets world_size from the config instead of the launcher
  env-only      reads LOCAL_RANK from the environment with no launcher
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--fault-step", type=int, default=0)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--backend", default="gloo")
p.add_argument("--device", default="cpu")
p.add_argument("--world-size", type=int, default=None)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--log-style", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--noise", action="store_true")
p.add_argument("--unused", action="store_true", help="find_unused_parameters=True")
args = p.parse_args()

if args.log_style == "logging":
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("trainer")


def say(msg):
    if args.log_style == "logging":
        log.info(msg)
    else:
        print(msg, flush=True)


class EMA:
    """Exponential moving average of model weights (vendored from an internal lib)."""

    def __init__(self, model, decay=0.999):
        self.decay = decay
        self.shadow = {k: v.detach().clone().cuda() for k, v in model.state_dict().items()}

    @torch.no_grad()
    def update(self, model):
        for k, v in model.state_dict().items():
            self.shadow[k].mul_(self.decay).add_(v.detach(), alpha=1 - self.decay)


def setup_distributed(backend):
    dist.init_process_group(backend=backend, timeout=timedelta(seconds=args.timeout))
    return dist.get_rank(), dist.get_world_size()


local_rank = int(os.environ["LOCAL_RANK"])

if args.fault == "set-device":
    torch.cuda.set_device(local_rank)

if args.fault == "world-size":
    dist.init_process_group(backend=args.backend, init_method="env://",
                            world_size=args.world_size, rank=int(os.environ["RANK"]),
                            timeout=timedelta(seconds=args.timeout))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = setup_distributed(args.backend)

say(f"[rank {rank}] initialised process group backend={dist.get_backend()} world_size={world} local_rank={local_rank}")

torch.manual_seed(0)
class Net(nn.Module):
    def __init__(self, aux):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 4))
        self.aux_head = nn.Linear(64, 4) if aux else None  # kept for a later experiment

    def forward(self, x):
        return self.body(x)


model = Net(args.unused)
ddp = DDP(model, find_unused_parameters=args.unused)
opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)

if args.fault == "double-init":
    # trainer utilities "make sure" distributed is up (common copy-paste)
    rank, world = setup_distributed(args.backend)

ema = None
if args.fault == "lib-ema" and rank == args.fault_rank:
    ema = EMA(model)
elif args.fault == "lib-ema":
    ema = None

if args.noise:
    warnings.warn("torch.distributed: NCCL not available, falling back to gloo for CPU tensors; "
                  "performance will be degraded", UserWarning)
    if rank == 0:
        say("WARNING: CUDA is not available - training on CPU. This will be very slow!")

g = torch.Generator().manual_seed(1234 + rank)
it = range(args.steps)
if args.log_style == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(it, desc="train", file=sys.stdout, mininterval=0)

for step in it:
    x = torch.randn(16, 32, generator=g)
    y = torch.randint(0, 4, (16,), generator=g)
    if args.fault == "cuda-batch" and rank == args.fault_rank and step == args.fault_step:
        x, y = x.to(args.device), y.to(args.device)
    loss = nn.functional.cross_entropy(ddp(x), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if ema is not None:
        ema.update(model)
    t = loss.detach().clone()
    dist.all_reduce(t)
    if rank == 0 and args.log_style != "tqdm":
        say(f"step {step} loss {t.item() / world:.4f} lr 1.0e-03")
    elif rank == 0:
        it.set_postfix(loss=f"{t.item() / world:.4f}")
    time.sleep(0.2)

dist.barrier()
if rank == 0:
    say("training finished; saving final weights to final.pt")
dist.destroy_process_group()
