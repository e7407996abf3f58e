"""Helpers for circular_main.py. The type import below re-imports the entry script -> circular import."""
import torch
import torch.nn as nn

from circular_main import TrainConfig


def build_model(cfg: TrainConfig) -> nn.Module:
    return nn.Sequential(nn.Embedding(cfg.vocab, cfg.dim), nn.Linear(cfg.dim, cfg.vocab))


def make_batches(cfg: TrainConfig):
    g = torch.Generator().manual_seed(0)
    for _ in range(cfg.steps):
        x = torch.randint(0, cfg.vocab, (4, cfg.seq), generator=g)
        yield x, torch.roll(x, -1, 1)
