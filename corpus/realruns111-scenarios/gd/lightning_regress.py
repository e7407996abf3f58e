"""Lightning regression on a synthetic tabular set (CPU).

--lr sets the optimiser step; --scheduler picks a schedule ("none" | "warmup-linear-up", a
mis-signed linear schedule that keeps increasing the LR); --detect-anomaly passes the
Trainer flag. The metric logged to the progress bar is the training loss.
"""
import argparse
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=0.01)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--optim", default="sgd")
p.add_argument("--scheduler", default="none")
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--strategy", default="auto")
p.add_argument("--out", default="tmp/pl_out")
p.add_argument("--bar", default="default")
args = p.parse_args()

L.seed_everything(42)
g = torch.Generator().manual_seed(0)
X = torch.randn(1024, 8, generator=g)
w = torch.randn(8, generator=g)
Y = X @ w + 0.5 * torch.randn(1024, generator=g)  # noisy targets


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 64), nn.GELU(), nn.Linear(64, 64), nn.GELU(), nn.Linear(64, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x).squeeze(-1), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.net(x).squeeze(-1), y), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams_lr, momentum=0.9) if args.optim == "sgd" \
            else torch.optim.AdamW(self.parameters(), lr=self.hparams_lr)
        if args.scheduler == "warmup-linear-up":
            # intended: linear decay from 1.0 to 0.0 over training; sign error makes it grow
            total = self.trainer.estimated_stepping_batches
            sch = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0 + 4.0 * s / total)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sch, "interval": "step"}}
        return opt


m = Reg()
m.hparams_lr = args.lr
train = DataLoader(TensorDataset(X[:896], Y[:896]), batch_size=32, shuffle=True)
val = DataLoader(TensorDataset(X[896:], Y[896:]), batch_size=64)
trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices, strategy=args.strategy,
                    log_every_n_steps=5, default_root_dir=args.out, detect_anomaly=args.detect_anomaly,
                    enable_checkpointing=False, logger=False,
                    callbacks=[L.pytorch.callbacks.TQDMProgressBar(refresh_rate=1)] if args.bar == "tqdm" else None)
trainer.fit(m, train, val)
print("final metrics:", {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()})
