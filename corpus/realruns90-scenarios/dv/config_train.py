"""Config-driven training loop (YAML or JSON config file, optional --set overrides).

Faults come from the config files in scenarios/configs/ (wrong key, wrong type, bad syntax, missing file).
Launch with torchrun (uses gloo) or plain python (single process, no process group).
"""
import argparse
import json
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import yaml

p = argparse.ArgumentParser()
p.add_argument("--config", required=True)
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank = dist.get_rank() if distributed else 0
world = dist.get_world_size() if distributed else 1


def load_config(path):
    with open(path) as f:
        if path.endswith((".yaml", ".yml")):
            return yaml.safe_load(f)
        return json.load(f)


cfg = load_config(args.config)
if rank == 0:
    print(f"loaded config {args.config}: {json.dumps(cfg)}", flush=True)

mcfg, ocfg, tcfg = cfg["model"], cfg["optimizer"], cfg["train"]
model = nn.Sequential(nn.Linear(mcfg["in_dim"], mcfg["hidden"]), nn.GELU(), nn.Linear(mcfg["hidden"], mcfg["classes"]))
if distributed:
    model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.AdamW(model.parameters(), lr=ocfg["lr"], weight_decay=ocfg["weight_decay"],
                        betas=tuple(ocfg.get("betas", (0.9, 0.999))))
sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=tcfg["steps"])
g = torch.Generator().manual_seed(rank)
for step in range(tcfg["steps"]):
    x = torch.randn(tcfg["batch_size"], mcfg["in_dim"], generator=g)
    y = torch.randint(0, mcfg["classes"], (tcfg["batch_size"],), generator=g)
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step(); sched.step()
    if rank == 0 and step % tcfg.get("log_every", 1) == 0:
        print(f"step {step:3d} | loss {loss.item():.4f} | lr {sched.get_last_lr()[0]:.2e}", flush=True)
    time.sleep(0.1)
if rank == 0:
    print("done", flush=True)
if distributed:
    dist.destroy_process_group()
