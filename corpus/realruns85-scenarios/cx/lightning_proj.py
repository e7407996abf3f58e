"""Lightning classifier with a contrastive projection head (CPU, ddp / gloo)."""
import argparse
import os
import warnings

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--strategy", default="ddp")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--use-proj-from-epoch", type=int, default=0,
               help="projection head only enters the loss from this epoch on (warm-up)")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--freeze", action="store_true", help="freeze encoder (linear probe)")
args = p.parse_args()


class Clf(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.cls = nn.Linear(64, 4)
        self.proj = nn.Linear(64, 16)
        self.bn = nn.BatchNorm1d(64)

    def training_step(self, batch, idx):
        x, y = batch
        h = self.bn(self.enc(x))
        loss = F.cross_entropy(self.cls(h), y)
        if self.current_epoch >= args.use_proj_from_epoch:
            z = F.normalize(self.proj(h), dim=-1)
            sim = z @ z.t() / 0.1
            loss = loss + 0.1 * F.cross_entropy(sim, torch.arange(len(x), device=x.device))
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, idx):
        x, y = batch
        acc = (self.cls(self.bn(self.enc(x))).argmax(-1) == y).float().mean()
        self.log("val_acc", acc, prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, generator=g)
    y = (x[:, :4].argmax(-1))
    return TensorDataset(x, y)


if __name__ == "__main__":
    L.seed_everything(7)
    m = Clf()
    if args.freeze:
        m.enc.requires_grad_(False)
    tr = L.Trainer(accelerator="cpu", devices=args.devices, strategy=args.strategy,
                   max_epochs=args.epochs, log_every_n_steps=5, enable_checkpointing=False,
                   logger=False)
    tr.fit(m, DataLoader(data(256, 0), batch_size=16, shuffle=True),
           DataLoader(data(64, 1), batch_size=16))
