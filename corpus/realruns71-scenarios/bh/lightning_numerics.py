#!/usr/bin/env python
"""Lightning regression/classification run with tqdm progress bar; flags select the numerics problem."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint, TQDMProgressBar

p = argparse.ArgumentParser()
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--opt", default="sgd")
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--devices", type=int, default=1)
p.add_argument("--strategy", default="auto")
p.add_argument("--monitor", default="val_loss")
p.add_argument("--log-name", default="val_loss", help="name under which validation loss is logged")
p.add_argument("--check-finite", type=int, default=1)
p.add_argument("--clip", type=float, default=0.0)
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--target-scale", type=float, default=1.0)
args = p.parse_args()

L.seed_everything(7)


def make(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    w = torch.randn(16, 1, generator=torch.Generator().manual_seed(0))
    y = (x @ w + 0.1 * torch.randn(n, 1, generator=g)) * args.target_scale
    return TensorDataset(x, y)


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True, sync_dist=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log(args.log_name, F.mse_loss(self.net(x), y), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        if args.opt == "sgd":
            return torch.optim.SGD(self.parameters(), lr=args.lr, momentum=0.9)
        return torch.optim.Adam(self.parameters(), lr=args.lr)


if __name__ == "__main__":
    cbs = [EarlyStopping(monitor=args.monitor, patience=3, check_finite=bool(args.check_finite), verbose=True),
           ModelCheckpoint(dirpath="/work/rr71/bh/tmp_pl_ckpt", monitor=args.monitor, save_top_k=1), TQDMProgressBar(refresh_rate=4)]
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices, strategy=args.strategy,
                        callbacks=cbs, log_every_n_steps=5, gradient_clip_val=args.clip or None,
                        detect_anomaly=args.detect_anomaly, logger=False, enable_model_summary=True)
    trainer.fit(Reg(), DataLoader(make(1024, 1), batch_size=32, shuffle=True),
                DataLoader(make(256, 2), batch_size=64))
    print(f"best checkpoint: {trainer.checkpoint_callback.best_model_path} "
          f"score={trainer.checkpoint_callback.best_model_score}")
