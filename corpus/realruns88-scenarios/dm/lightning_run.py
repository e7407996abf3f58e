"""Tiny regression model trained with Lightning (CPU, optional ddp on gloo), EarlyStopping + checkpoint callbacks."""
import argparse
import os

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--monitor", default="val_loss")
p.add_argument("--out", default="/work/rr88/dm/work/pl_out")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x).squeeze(-1), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("valid/loss", F.mse_loss(self.net(x).squeeze(-1), y), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


g = torch.Generator().manual_seed(0)
X = torch.randn(4096, 16, generator=g)
Y = X @ torch.randn(16, generator=g) + 0.1 * torch.randn(4096, generator=g)
train = DataLoader(TensorDataset(X[:3584], Y[:3584]), batch_size=16, shuffle=True)
val = DataLoader(TensorDataset(X[3584:], Y[3584:]), batch_size=64)
trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices,
                    strategy="ddp" if args.devices > 1 else "auto", default_root_dir=args.out,
                    callbacks=[EarlyStopping(monitor=args.monitor, patience=2),
                               ModelCheckpoint(dirpath=args.out, monitor=args.monitor)],
                    log_every_n_steps=10, enable_progress_bar=True)
trainer.fit(Reg(), train, val)
