"""Hydra-configured trainer with JSON job logging. Fault: launch without optim.lr override (mandatory ???)."""
import logging, warnings
import hydra
from omegaconf import DictConfig, OmegaConf
import torch, torch.nn as nn, torch.nn.functional as F

log = logging.getLogger("train")

@hydra.main(version_base="1.3", config_path="conf", config_name="train")
def main(cfg: DictConfig):
    log.info("config loaded", extra={"model": OmegaConf.to_container(cfg.model), "steps": cfg.train.steps})
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(cfg.model.d, cfg.model.d), nn.ReLU(), nn.Linear(cfg.model.d, cfg.model.n_classes))
    log.info("model built", extra={"params": sum(p.numel() for p in model.parameters())})
    opt = torch.optim.SGD(model.parameters(), lr=cfg.optim.lr, momentum=cfg.optim.momentum)
    for step in range(cfg.train.steps):
        x = torch.randn(cfg.train.batch_size, cfg.model.d); y = torch.randint(0, cfg.model.n_classes, (cfg.train.batch_size,))
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 5 == 0:
            log.info("train step", extra={"step": step, "loss": round(loss.item(), 4)})
    log.info("done")

if __name__ == "__main__":
    main()
