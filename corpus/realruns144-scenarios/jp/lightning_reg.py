"""Lightning regression on a small tabular set, with EarlyStopping on val_loss.

--fault none         healthy run (prints the usual Lightning warnings)
--fault missing_nan  the CSV of training shard 'part-0003' has empty cells that were read as NaN
--fault lr_typo      learning rate 3e-1 typed instead of 3e-4 (diverges, loss grows but stays finite)
"""
import argparse
import math
import os

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, RichProgressBar, TQDMProgressBar

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "missing_nan", "lr_typo"])
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--lr", type=float, default=3e-4)
p.add_argument("--root", default="/work/rr143/jp/out/pl")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--bar", default="rich", choices=["rich", "tqdm"])
args = p.parse_args()

rng = np.random.default_rng(0)
W = rng.normal(size=(12, 1))


def make(n, nan_rows=0):
    X = rng.normal(size=(n, 12)).astype(np.float32)
    y = (X @ W + 0.1 * rng.normal(size=(n, 1))).astype(np.float32)
    if nan_rows:
        idx = rng.choice(n, nan_rows, replace=False)
        X[idx, 4] = np.nan  # empty cells read by np.genfromtxt
    return torch.utils.data.TensorDataset(torch.from_numpy(X), torch.from_numpy(y))


parts = [make(256) for _ in range(3)] + [make(256, nan_rows=3 if args.fault == "missing_nan" else 0)]
train = torch.utils.data.ConcatDataset(parts)
val = make(256)


class Reg(L.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(12, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.net(x), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)


lr = args.lr
if args.fault == "lr_typo":
    lr = 3e-1
L.seed_everything(0)
model = Reg(lr)
trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices,
                    default_root_dir=args.root, log_every_n_steps=5,
                    callbacks=[EarlyStopping("val_loss", patience=3, check_finite=True, verbose=True),
                               TQDMProgressBar() if args.bar == "tqdm" else RichProgressBar()],
                    enable_checkpointing=False)
trainer.fit(model, torch.utils.data.DataLoader(train, batch_size=32, shuffle=True),
            torch.utils.data.DataLoader(val, batch_size=64))
print("fit finished: epoch", trainer.current_epoch, "metrics",
      {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()})
