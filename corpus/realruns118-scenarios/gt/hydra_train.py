"""Hydra-configured regression training (plain PyTorch, optional DDP under torchrun, gloo/CPU).
Faults come from the config/overrides themselves (bad lr, missing keys, wrong kwargs, missing shard)."""
import logging, math, os, warnings
from datetime import timedelta
import hydra
from hydra.utils import instantiate
from omegaconf import DictConfig, OmegaConf
import torch, torch.nn as nn, torch.distributed as dist

log = logging.getLogger(__name__)

def make_data(cfg, rank):
    if cfg.data.use_shards:
        path = cfg.data.shard_pattern.format(rank=rank)
        d = torch.load(path)
        return d["x"], d["y"]
    g = torch.Generator().manual_seed(cfg.seed + rank)
    x = torch.randn(cfg.data.n_samples, 20, generator=g)
    w = torch.arange(20, dtype=torch.float32) / 20
    y = (x @ w).unsqueeze(1) + cfg.data.noise * torch.randn(cfg.data.n_samples, 1, generator=g)
    return x, y

@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg: DictConfig):
    distributed = "RANK" in os.environ
    rank = int(os.environ.get("RANK", 0))
    if distributed:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    log.info("run %s on rank %d (world %s)", cfg.run_name, rank, os.environ.get("WORLD_SIZE", 1))
    torch.manual_seed(cfg.seed)
    model = instantiate({k: v for k, v in cfg.model.items() if k != "name"})
    if distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt_cfg = {k: v for k, v in cfg.optimizer.items() if k != "name"}
    opt = instantiate(opt_cfg, params=model.parameters())
    x, y = make_data(cfg, rank)
    log.info("data: %s samples from %s", len(x), cfg.data.root if cfg.data.use_shards else "synthetic")
    for step in range(cfg.steps):
        idx = torch.randint(0, len(x), (cfg.batch_size,))
        loss = nn.functional.mse_loss(model(x[idx]), y[idx])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % cfg.log_every == 0 or step == cfg.steps - 1:
            log.info("step %d loss %.5f", step, loss.item())
        if not math.isfinite(loss.item()):
            log.error("non-finite loss %s at step %d, aborting job", loss.item(), step)
            raise FloatingPointError(f"loss is {loss.item()} at step {step}")
    from hydra.core.hydra_config import HydraConfig
    out = os.path.join(HydraConfig.get().runtime.output_dir, "final.pt")
    if rank == 0:
        torch.save((model.module if distributed else model).state_dict(), out)
        log.info("saved %s", out)
    if distributed:
        dist.destroy_process_group()
    return loss.item()

if __name__ == "__main__":
    main()
