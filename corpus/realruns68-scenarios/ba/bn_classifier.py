"""Tabular classifier with BatchNorm, per-rank shard files, config from JSON (gloo DDP)."""
import argparse, datetime, json, logging, os, sys

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--config", required=True)
p.add_argument("--write-config", default="good", choices=["good", "trailing-comma", "none"])
p.add_argument("--short-shard-rank", type=int, default=-1)
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()

rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | rank=%(rank)s | %(message)s")
log = logging.LoggerAdapter(logging.getLogger("bncls"), {"rank": rank})

if args.write_config != "none" and rank == 0:
    txt = '{\n  "hidden": 32,\n  "lr": 0.05,\n  "batch_size": 16,\n  "classes": 3\n}\n'
    if args.write_config == "trailing-comma":
        txt = '{\n  "hidden": 32,\n  "lr": 0.05,\n  "batch_size": 16,\n  "classes": 3,\n}\n'  # hand-edited
    with open(args.config, "w") as f:
        f.write(txt)

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
log.info("process group up (world=%d)", world)
dist.barrier()
with open(args.config) as f:
    cfg = json.load(f)
log.info("config: %s", cfg)

n = 16 * 4 + (1 if rank == args.short_shard_rank else 0)  # shard sizes come from the upstream split
g = torch.Generator().manual_seed(rank)
X = torch.randn(n, 10, generator=g); Y = torch.randint(0, cfg["classes"], (n,), generator=g)
dl = DataLoader(TensorDataset(X, Y), batch_size=cfg["batch_size"], shuffle=False)
model = nn.Sequential(nn.Linear(10, cfg["hidden"]), nn.BatchNorm1d(cfg["hidden"]), nn.ReLU(),
                      nn.Linear(cfg["hidden"], cfg["classes"]))
model = nn.parallel.DistributedDataParallel(model)
opt = torch.optim.SGD(model.parameters(), lr=cfg["lr"], momentum=0.9)
for ep in range(args.epochs):
    tot = 0.0
    for i, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        tot += loss.item()
        log.info("epoch %d iter %d/%d loss %.4f", ep, i, len(dl), loss.item())
    log.info("epoch %d mean loss %.4f", ep, tot / len(dl))
dist.barrier()
dist.destroy_process_group()
log.info("finished")
