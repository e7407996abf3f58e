"""Hydra-configured MLP trainer (config in scenarios/conf/train.yaml)."""
import logging
import os

import hydra
import torch
import torch.nn as nn
import torch.nn.functional as F
from omegaconf import DictConfig, OmegaConf

log = logging.getLogger(__name__)


@hydra.main(config_path="conf", config_name="train")
def main(cfg: DictConfig):
    log.info("config:\n%s", OmegaConf.to_yaml(cfg))
    log.info("working dir: %s", os.getcwd())
    torch.manual_seed(0)
    layers, d = [], 16
    for _ in range(cfg.model.layers):
        layers += [nn.Linear(d, cfg.model.hidden), nn.ReLU()]
        d = cfg.model.hidden
    model = nn.Sequential(*layers, nn.Linear(d, 1))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.optim.lr, weight_decay=cfg.optim.weight_decay)
    X = torch.randn(cfg.data.n, 16)
    Y = X.sum(1, keepdim=True)
    for ep in range(cfg.trainer.epochs):
        perm = torch.randperm(cfg.data.n)
        tot = 0.0
        for i in range(0, cfg.data.n, cfg.data.batch_size):
            idx = perm[i:i + cfg.data.batch_size]
            loss = F.mse_loss(model(X[idx]), Y[idx])
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item() * len(idx)
        log.info("epoch %d train_loss %.4f", ep, tot / cfg.data.n)
    torch.save(model.state_dict(), "model.pt")
    log.info("saved model.pt")


if __name__ == "__main__":
    main()
