"""Hydra-configured tabular trainer (config registered in ConfigStore; overrides on the command line)."""
import logging, os, warnings
from dataclasses import dataclass, field
from datetime import timedelta

import hydra
import numpy as np
import torch
import torch.nn as nn
from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, OmegaConf

log = logging.getLogger(__name__)


@dataclass
class DataCfg:
    path: str = MISSING
    n_features: int = 12
    target: str = "churn"


@dataclass
class ModelCfg:
    hidden: int = 48
    dropout: float = 0.1
    head: str = "binary"   # binary | multiclass


@dataclass
class TrainCfg:
    epochs: int = 3
    batch_size: int = 32
    lr: float = 1e-2
    distributed: bool = False


@dataclass
class Cfg:
    data: DataCfg = field(default_factory=DataCfg)
    model: ModelCfg = field(default_factory=ModelCfg)
    train: TrainCfg = field(default_factory=TrainCfg)
    seed: int = 0


cs = ConfigStore.instance()
cs.store(name="config", node=Cfg)


def load_table(path, n_features):
    arr = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float32)
    x, y = torch.from_numpy(arr[:, :n_features]), torch.from_numpy(arr[:, n_features])
    return x, y


@hydra.main(version_base=None, config_name="config")
def main(cfg: Cfg):
    log.info("config:\n" + OmegaConf.to_yaml(cfg))
    torch.manual_seed(cfg.seed)
    if cfg.train.distributed:
        torch.distributed.init_process_group("gloo", timeout=timedelta(seconds=25))
    x, y = load_table(cfg.data.path, cfg.data.n_features)
    log.info(f"data: {tuple(x.shape)} target={cfg.data.target} positives={int(y.sum())}")
    out_dim = 1 if cfg.model.head == "binary" else 2
    model = nn.Sequential(nn.Linear(cfg.data.n_features, cfg.model.hidden), nn.ReLU(), nn.Dropout(cfg.model.dropout),
                          nn.Linear(cfg.model.hidden, out_dim))
    if cfg.train.distributed:
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.train.lr)
    crit = nn.BCEWithLogitsLoss()
    n = x.shape[0]
    for epoch in range(cfg.train.epochs):
        perm = torch.randperm(n)
        tot = 0.0
        for i in range(0, n, cfg.train.batch_size):
            idx = perm[i:i + cfg.train.batch_size]
            logits = model(x[idx]).squeeze(-1)
            loss = crit(logits, y[idx])
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item() * len(idx)
        log.info(f"epoch {epoch} train_loss={tot / n:.4f}")
    torch.save(model.state_dict(), "model.pt")
    log.info(f"saved model to {os.getcwd()}/model.pt")


if __name__ == "__main__":
    main()
