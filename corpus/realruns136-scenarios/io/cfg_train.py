"""DDP training driven by a YAML/JSON config; start-up config problems."""
import argparse, json, os, time, logging
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist

logging.basicConfig(level=logging.INFO, format="%(asctime)s | %(levelname)-7s | %(name)s | %(message)s")
log = logging.getLogger("cfg_train")

def load_config(path):
    with open(path) as f:
        if path.endswith((".yaml", ".yml")):
            import yaml
            return yaml.safe_load(f)
        return json.load(f)

def main():
    p = argparse.ArgumentParser(description="config-driven trainer")
    p.add_argument("--config", required=True)
    p.add_argument("--lr", type=float)
    p.add_argument("--max-steps", type=int)
    p.add_argument("--grad-accum", type=int, default=1)
    args = p.parse_args()
    dist.init_process_group("gloo", timeout=timedelta(seconds=20))
    rank = dist.get_rank()
    # each node keeps its own copy of the configs under $CONFIG_ROOT
    cfg_path = os.path.join(os.environ.get("CONFIG_ROOT", "configs"), args.config)
    log.info("rank %d loading config %s", rank, cfg_path)
    cfg = load_config(cfg_path)
    lr = args.lr or cfg["optim"]["lr"]
    steps = args.max_steps or cfg["train"]["max_steps"]
    hidden = cfg["model"]["hidden"]
    log.info("rank %d cfg: hidden=%s lr=%s steps=%s batch=%s", rank, hidden, lr, steps, cfg["train"]["batch_size"])
    torch.manual_seed(0)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(20, hidden), nn.GELU(), nn.Linear(hidden, 2)))
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=cfg["optim"].get("weight_decay", 0.0))
    for step in range(steps):
        x = torch.randn(cfg["train"]["batch_size"], 20); y = (x[:, 0] > 0).long()
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if rank == 0 and step % 10 == 0:
            log.info("step=%d loss=%.4f", step, loss.item())
        time.sleep(0.03)
    dist.barrier()
    if rank == 0: log.info("done")
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
