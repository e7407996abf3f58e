"""Training entry point whose optional integrations are imported according to flags.

--tracker wandb      : imports wandb (not installed in this env)
--optim hf-adamw     : uses transformers' AdamW (removed from recent transformers)
--sched lightning-util: uses an old pytorch_lightning utility path
"""
import argparse
import datetime
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--tracker", default="none", choices=["none", "wandb", "tensorboard"])
p.add_argument("--optim", default="torch-adamw", choices=["torch-adamw", "hf-adamw"])
p.add_argument("--steps", type=int, default=20)
p.add_argument("--project", default="tiny-ddp")
args = p.parse_args()

if args.tracker == "wandb":
    import wandb
if args.optim == "hf-adamw":
    from transformers import AdamW, get_linear_schedule_with_warmup
else:
    from torch.optim import AdamW
    from transformers import get_linear_schedule_with_warmup


def main():
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
    rank, world = dist.get_rank(), dist.get_world_size()
    if args.tracker == "wandb" and rank == 0:
        wandb.init(project=args.project, config=vars(args))
    torch.manual_seed(0)
    model = DDP(nn.Sequential(nn.Linear(16, 32), nn.GELU(), nn.Linear(32, 1)))
    opt = AdamW(model.parameters(), lr=1e-3)
    sched = get_linear_schedule_with_warmup(opt, 5, args.steps)
    for step in range(1, args.steps + 1):
        x = torch.randn(8, 16)
        loss = (model(x) - x.sum(1, keepdim=True)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step(); sched.step()
        if rank == 0 and step % 5 == 0:
            print(f"step {step} loss {loss.item():.4f} lr {sched.get_last_lr()[0]:.2e}", flush=True)
        time.sleep(0.05)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
