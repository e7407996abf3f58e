"""Family: experiment config / command line / project layout.
Reads a YAML experiment config (--cfg) merged with CLI overrides, builds a tiny model and trains with DDP.
  --use-hf-data   build the training set with the HF `datasets` library (Dataset.from_dict)
"""
import argparse, os, sys, time
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import yaml
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from _core import setup_logging, init_dist, TinyNet, make_data

p = argparse.ArgumentParser(description="tiny DDP trainer")
p.add_argument("--cfg", required=True)
p.add_argument("--lr", type=float, default=None)
p.add_argument("--batch-size", type=int, default=None)
p.add_argument("--max-steps", type=int, default=None)
p.add_argument("--use-hf-data", action="store_true")
args = p.parse_args()

with open(args.cfg) as f:
    cfg = yaml.safe_load(f)
for k in ("lr", "batch_size", "max_steps"):
    if getattr(args, k) is not None:
        cfg["train"][k] = getattr(args, k)

rank, ws = init_dist(timeout_s=30)
log = setup_logging(rank)
log.info("config: %s", cfg)

x, y = make_data(seed=rank)
if args.use_hf_data:
    from datasets import Dataset
    ds = Dataset.from_dict({"x": x.tolist(), "y": y.tolist()}).with_format("torch")
    x, y = ds["x"], ds["y"]

model = DDP(TinyNet(d_h=cfg["model"]["hidden"]))
opt = torch.optim.AdamW(model.parameters(), lr=float(cfg["train"]["lr"]))
bs = cfg["train"]["batch_size"]
for step in range(cfg["train"]["max_steps"]):
    i = (step * bs) % (len(x) - bs)
    loss = nn.functional.cross_entropy(model(x[i:i+bs]), y[i:i+bs])
    opt.zero_grad(); loss.backward(); opt.step()
    log.info("step %d loss %.4f", step, loss.item())
    time.sleep(0.1)
dist.barrier()
log.info("done")
dist.destroy_process_group()
