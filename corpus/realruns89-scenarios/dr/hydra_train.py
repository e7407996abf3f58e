"""Hydra-configured DDP classifier: logs through Hydra's job logging (console + <job>.log in the run dir)."""
import logging, os, warnings
from datetime import timedelta

import hydra
import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)

def build(cfg):
    m = cfg.model
    return nn.Sequential(nn.Linear(m.in_dim, m.hidden), nn.ReLU(), nn.Linear(m.hidden, m.hidden), nn.ReLU(), nn.Linear(m.hidden, m.n_classes))

@hydra.main(version_base=None, config_path="hydra_conf", config_name="config")
def main(cfg: DictConfig) -> None:
    rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    if rank == 0:
        log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    torch.manual_seed(cfg.seed)
    model = build(cfg)
    if cfg.resume:
        if cfg.resume_loader == "rank0" and rank != 0:
            pass
        else:
            log.info("[rank%d] resuming from %s", rank, cfg.resume)
            state = torch.load(cfg.resume, map_location="cpu")
            model.load_state_dict(state["model"])
            log.info("[rank%d] resumed at step %d", rank, state["step"])
    model = nn.parallel.DistributedDataParallel(model)  # broadcasts rank 0's weights
    opt = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr, momentum=0.9)
    data = np.load(cfg.data.path)
    X = torch.from_numpy(data["x"][rank::world]); Y = torch.from_numpy(data["y"][rank::world])
    log.info("[rank%d] %d samples from %s", rank, len(X), cfg.data.path)
    bs = cfg.data.batch_size
    for step in range(cfg.steps):
        i = (step * bs) % max(1, len(X) - bs)
        with warnings.catch_warnings():
            warnings.simplefilter("always")
            if step == 0:
                warnings.warn("The epoch parameter in `scheduler.step()` was not necessary and is being deprecated where possible.", UserWarning)
        loss = nn.functional.cross_entropy(model(X[i:i + bs]), Y[i:i + bs])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % cfg.log_every == 0:
            log.info("[rank%d] step %d loss %.4f", rank, step, loss.item())
    if cfg.save_to and rank == 0:
        torch.save({"model": model.module.state_dict(), "step": cfg.steps}, cfg.save_to)
        log.info("saved %s", cfg.save_to)
    dist.barrier()
    log.info("[rank%d] done", rank)
    dist.destroy_process_group()

if __name__ == "__main__":
    main()
