"""Hydra app with a structured (typed) config schema; trains a tiny MLP under torchrun.

Config overrides come from the command line, e.g. data.num_workers=4 optim.lr=3e-4.
"""
import logging
import os
from dataclasses import dataclass, field
from datetime import timedelta

import hydra
import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from hydra.core.config_store import ConfigStore
from omegaconf import OmegaConf

log = logging.getLogger(__name__)


@dataclass
class DataCfg:
    n_samples: int = 512
    batch_size: int = 32
    num_workers: int = 0


@dataclass
class OptimCfg:
    lr: float = 1e-2
    weight_decay: float = 0.0


@dataclass
class TrainerCfg:
    max_steps: int = 40
    log_every: int = 10


@dataclass
class Cfg:
    seed: int = 0
    data: DataCfg = field(default_factory=DataCfg)
    optim: OptimCfg = field(default_factory=OptimCfg)
    trainer: TrainerCfg = field(default_factory=TrainerCfg)


cs = ConfigStore.instance()
cs.store(name="schema", node=Cfg)


@hydra.main(version_base="1.3", config_path="conf", config_name="config")
def main(cfg):
    schema = OmegaConf.structured(Cfg)
    cfg = OmegaConf.merge(schema, cfg)
    rank = int(os.environ.get("RANK", 0))
    if "RANK" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    torch.manual_seed(cfg.seed)
    X = torch.randn(cfg.data.n_samples, 8)
    y = X.sum(1, keepdim=True)
    model = nn.Linear(8, 1)
    if dist.is_initialized():
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    for step in range(1, cfg.trainer.max_steps + 1):
        i = torch.randint(0, cfg.data.n_samples, (cfg.data.batch_size,))
        loss = F.mse_loss(model(X[i]), y[i])
        opt.zero_grad(); loss.backward(); opt.step()
        if step % cfg.trainer.log_every == 0:
            log.info("rank %d step %d loss %.4f", rank, step, loss.item())
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
