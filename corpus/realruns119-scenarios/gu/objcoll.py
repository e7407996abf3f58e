"""DDP eval loop that shares config / predictions with object collectives."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "unpicklable", "huge"])
p.add_argument("--steps", type=int, default=8)
p.add_argument("--pred-mb", type=int, default=16)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(levelname)s %(message)s")
dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()

# rank 0 owns the run config and shares it with everyone
cfg = [None]
if rank == 0:
    run_cfg = {"lr": 3e-3, "wd": 0.01, "eval_every": 4, "run_name": "exp-obj-119"}
    if a.fault == "unpicklable":
        run_cfg["metrics_file"] = open("/tmp/gu_metrics.jsonl", "a")  # handle kept in the config for convenience
    cfg = [run_cfg]
dist.broadcast_object_list(cfg, src=0)
cfg = cfg[0]
logging.info("rank %d got config %s", rank, {k: v for k, v in cfg.items() if k != "metrics_file"})
torch.manual_seed(0)
model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 3)))
opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg["wd"])
warnings.warn("torch.cuda.amp.GradScaler is enabled, but CUDA is not available.  Disabling.")  # from shared utils
for step in range(a.steps):
    x = torch.randn(32, 16); y = torch.randint(0, 3, (32,))
    loss = nn.functional.cross_entropy(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    logging.info("rank %d step %d loss %.4f", rank, step, loss.item())
    if (step + 1) % cfg["eval_every"] == 0:
        n = a.pred_mb * 1024 * 1024 // 8
        preds = {"rank": rank, "step": step, "scores": np.random.rand(n)}
        gathered = [None] * world
        logging.info("rank %d gathering %.1f MB of eval predictions", rank, preds["scores"].nbytes / 2**20)
        dist.all_gather_object(gathered, preds)
        if rank == 0:
            allscores = np.concatenate([g["scores"] for g in gathered])
            logging.info("eval step %d: %d predictions, mean score %.4f", step, allscores.size, allscores.mean())
dist.barrier()
logging.info("rank %d finished", rank)
dist.destroy_process_group()
