"""Lightning training of a small regression/classification model with the tqdm progress bar.

--fault none | nan-target (a missing label parsed as nan -> loss nan,
        EarlyStopping(check_finite) stops the run) | anomaly (Trainer(detect_anomaly=True) + sqrt at 0)
"""
import argparse
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, TQDMProgressBar
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--devices", type=int, default=1)
p.add_argument("--strategy", default="auto")
p.add_argument("--fault-epoch", type=int, default=2)
args = p.parse_args()


def make_data(n=2048, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, generator=torch.Generator().manual_seed(0))
    noise = torch.randn(n, generator=g) * (0.2 + 0.8 * (x[:, 0] > 1).float())
    y = x @ w * 0.3 + noise
    if args.fault == "nan-target" and n > 1600:
        # a missing value in the label column ("" in the CSV) parsed as float('nan')
        y[1703] = float("nan")
    return x, y


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.mu = nn.Linear(64, 1)
        self.logvar = nn.Linear(64, 1)
        self.center = nn.Linear(64, 8, bias=False)

    def training_step(self, batch, i):
        x, y = batch
        h = self.body(x)
        mu = self.mu(h).squeeze(-1)
        loss = F.mse_loss(mu, y)
        if args.fault == "anomaly":
            # center-loss on a projection: euclidean distance to the batch centroid
            z = self.center(h)
            d = ((z - z.mean(0, keepdim=True)) ** 2).sum(-1).sqrt()
            loss = loss + 1e-2 * d.mean()
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.mu(self.body(x)).squeeze(-1), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=args.lr)


class Anom(Reg):
    def on_train_epoch_start(self):
        if self.current_epoch == args.fault_epoch:
            # freeze-then-unfreeze schedule resets the centering layer to zeros (bug: meant to zero its grads)
            with torch.no_grad():
                self.center.weight.zero_()


if __name__ == "__main__":
    torch.manual_seed(0)
    x, y = make_data()
    xv, yv = make_data(256, seed=1)
    dl = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=args.fault != "nan-target")
    vdl = DataLoader(TensorDataset(xv, yv), batch_size=128)
    cbs = []
    cbs.append(TQDMProgressBar(refresh_rate=4))
    if args.fault == "nan-target":
        cbs.append(EarlyStopping(monitor="train_loss_step", check_finite=True, patience=1000, check_on_train_epoch_end=False, verbose=True))
        model = Reg()
    elif args.fault == "anomaly":
        model = Anom()
    else:
        model = Reg()
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices, strategy=args.strategy,
                        callbacks=cbs, detect_anomaly=args.fault == "anomaly", log_every_n_steps=4,
                        enable_checkpointing=False, default_root_dir="lightning_out")
    trainer.fit(model, dl, vdl)
