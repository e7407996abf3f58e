"""Lightning regression model on CPU.

  --fault none        healthy run (ddp on 2 CPU processes when --devices 2), noisy warnings
  --fault earlystop   EarlyStopping monitors 'val_loss' but the module logs 'valid/loss'
  --fault ckptmon     ModelCheckpoint monitors 'val_acc' that is never logged
  --logdir DIR        CSVLogger directory
"""
import argparse
import os
import warnings

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--logdir", default="pl_logs")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x).squeeze(-1), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x).squeeze(-1), y)
        self.log("valid/loss", loss, sync_dist=True)
        if args.fault == "lognonscalar":
            # per-output-dimension error, meant for a histogram
            self.log("valid/abs_err", (self.net(x).squeeze(-1) - y).abs().mean(0, keepdim=True).expand(2))

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=1e-2)
        sch = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)
        return [opt], [sch]


def main():
    L.seed_everything(7)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(640, 8, generator=g)
    y = X @ torch.linspace(-1, 1, 8) + 0.1 * torch.randn(640, generator=g)
    tr = DataLoader(TensorDataset(X[:512], y[:512]), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(X[512:], y[512:]), batch_size=64)

    cbs = []
    if args.fault == "earlystop":
        cbs.append(EarlyStopping(monitor="val_loss", patience=2, mode="min"))
    if args.fault == "ckptmon":
        cbs.append(ModelCheckpoint(dirpath=os.path.join(args.logdir, "ckpt"), monitor="val_acc", mode="max"))

    trainer = L.Trainer(accelerator="cpu", devices=args.devices,
                        strategy="ddp" if args.devices > 1 else "auto",
                        max_epochs=args.epochs, logger=CSVLogger(args.logdir, name="reg"),
                        callbacks=cbs, log_every_n_steps=4, enable_model_summary=True,
                        enable_checkpointing=(args.fault == "ckptmon"))
    trainer.fit(Reg(), tr, va)
    if trainer.global_rank == 0:
        print("fit finished; metrics:", {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()})


if __name__ == "__main__":
    main()
