"""Config-driven toy trainer. Reads hyper-parameters from a YAML or JSON file (--cfg-file),
or is run through Hydra (--hydra, config in configs/hydra/), and takes the local rank on the
command line the way torch.distributed.launch used to pass it.
"""
import argparse
import datetime
import json
import os
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import yaml


def load_cfg(path):
    with open(path) as f:
        if path.endswith(".json"):
            return json.load(f)
        return yaml.safe_load(f)


def train(cfg, rank=0, world=1):
    torch.manual_seed(cfg.get("seed", 0))
    model = nn.Sequential(nn.Linear(cfg["model"]["in_dim"], cfg["model"]["hidden"]), nn.Tanh(),
                          nn.Linear(cfg["model"]["hidden"], 1))
    if world > 1:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=cfg["optim"]["lr"],
                           weight_decay=cfg["optim"].get("weight_decay", 0.0))
    for step in range(1, cfg["steps"] + 1):
        x = torch.randn(cfg["batch_size"], cfg["model"]["in_dim"])
        loss = (model(x) - x.mean(1, keepdim=True)).pow(2).mean()
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 10 == 0 and rank == 0:
            print(f"step {step}/{cfg['steps']} loss={loss.item():.5f}", flush=True)
    if rank == 0:
        print("finished", flush=True)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cfg-file", default="configs/train.yaml")
    p.add_argument("--local_rank", type=int, default=0)
    args = p.parse_args()
    cfg = load_cfg(args.cfg_file)
    print(f"config: {cfg}", flush=True)
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = 0
    if world > 1:
        dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
        rank = dist.get_rank()
        print(f"local_rank={args.local_rank} rank={rank}/{world}", flush=True)
    train(cfg, rank, world)
    if world > 1:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
