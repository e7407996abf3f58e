"""Tiny DDP trainer configured from a YAML/JSON file (family: config / env / path set-up)."""
import argparse, json, logging, os, sys, time, warnings
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
import yaml

log = logging.getLogger("trainer")

def load_config(path):
    with open(path) as f:
        if path.endswith((".yaml", ".yml")):
            return yaml.safe_load(f)
        return json.load(f)

def main():
    p = argparse.ArgumentParser()
    p.add_argument("--config", required=True)
    p.add_argument("--shard-dir", default=None, help="per-rank data shards (relative to cwd)")
    p.add_argument("--use-logging", action="store_true")
    p.add_argument("--noisy", action="store_true")
    p.add_argument("--tqdm-bar", action="store_true")
    args = p.parse_args()
    if args.use_logging:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
    else:
        logging.basicConfig(level=logging.INFO, format="%(message)s")
    distributed = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0))
    cfg = load_config(args.config)
    if rank == 0:
        log.info("loaded config %s: %s", args.config, cfg)
    backend = cfg.get("backend", "gloo")
    if distributed:
        dist.init_process_group(backend, timeout=timedelta(seconds=30))
        rank = dist.get_rank()
    if args.noisy:
        warnings.warn("config key 'warmup' is deprecated, use 'warmup_steps' (ignored)", UserWarning)
        if rank == 0:
            log.warning("NaN/Inf check disabled for speed; set check_finite: true to enable")
    if "data_root_env" in cfg:
        data_root = os.environ[cfg["data_root_env"]]
        log.info("rank %d data root %s", rank, data_root)
    torch.manual_seed(cfg.get("seed", 0))
    model = nn.Sequential(nn.Linear(16, cfg.get("hidden", 32)), nn.ReLU(), nn.Linear(cfg.get("hidden", 32), 1))
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg["lr"], weight_decay=cfg.get("weight_decay", 0.0))
    if args.shard_dir is not None:
        shard = os.path.join(args.shard_dir, f"shard_{rank}.pt")
        data = torch.load(shard)
        x, y = data["x"], data["y"]
    else:
        x = torch.randn(256, 16); y = x.sum(1, keepdim=True)
    steps = cfg.get("steps", 20)
    it = range(steps)
    if args.tqdm_bar and rank == 0:
        from tqdm import tqdm
        it = tqdm(it, desc="train", ncols=80)
    for step in it:
        idx = torch.randint(0, x.shape[0], (cfg.get("batch_size", 16),))
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0 and rank == 0:
            log.info("step %d loss %.4f", step, loss.item())
        time.sleep(0.02)
    if rank == 0:
        log.info("finished %d steps", steps)
    if distributed:
        dist.destroy_process_group()

if __name__ == "__main__":
    main()
