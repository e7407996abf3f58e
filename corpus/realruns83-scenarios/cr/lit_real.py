"""Real PyTorch Lightning loop: LightningModule, ModelCheckpoint/EarlyStopping callbacks, local metric.

usage: lit_real.py --fault {none,monitor_key} [--devices N]
"""
import argparse
import os

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset


class RunningMSE:
    def __init__(self):
        self.sum, self.n = 0.0, 0

    def update(self, p, y):
        self.sum += F.mse_loss(p, y, reduction="sum").item(); self.n += y.numel()

    def compute(self):
        return self.sum / max(self.n, 1)


class Reg(L.LightningModule):
    def __init__(self, fault):
        super().__init__()
        self.fault = fault
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
        self.metric = RunningMSE()

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        p = self.net(x)
        self.metric.update(p, y)
        # logged under the key used by an older version of this module
        self.log("val/mse" if self.fault == "monitor_key" else "val_loss", F.mse_loss(p, y), sync_dist=True)

    def on_validation_epoch_end(self):
        print(f"[rank{self.global_rank}] epoch {self.current_epoch} running mse {self.metric.compute():.4f}", flush=True)
        self.metric = RunningMSE()

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--devices", type=int, default=1)
    a = p.parse_args()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 16, generator=g); y = x[:, :1] * 2 + 0.1 * torch.randn(256, 1, generator=g)
    tl = DataLoader(TensorDataset(x[:192], y[:192]), batch_size=16, shuffle=True)
    vl = DataLoader(TensorDataset(x[192:], y[192:]), batch_size=16)
    cbs = [ModelCheckpoint(dirpath="/work/rr83/cr/ckpt/lit", monitor="val_loss", mode="min"),
           EarlyStopping(monitor="val_loss", patience=3)]
    tr = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp" if a.devices > 1 else "auto", max_epochs=3,
                   callbacks=cbs, log_every_n_steps=4, enable_progress_bar=True, logger=False)
    tr.fit(Reg(a.fault), tl, vl)
    print("best:", cbs[0].best_model_path, flush=True)


if __name__ == "__main__":
    main()
