"""Lightning regression on synthetic tabular data (CPU, ddp via Lightning's own launcher).

--fault none | unused_default | onecycle | ctrl_c
"""
import argparse
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--bar", default="tqdm", choices=["tqdm", "rich"])
p.add_argument("--batch-size", type=int, default=32)
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self, n_in=12, hidden=64, lr=1e-2, steps_per_epoch=None, epochs=1):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.ReLU(), nn.Linear(hidden, 1))
        self.aux = nn.Linear(n_in, 1)  # legacy head, no longer used in forward

    def forward(self, x):
        return self.net(x).squeeze(-1)

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        if args.fault == "ctrl_c":
            time.sleep(0.2)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", F.mse_loss(self(x), y), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        if args.fault == "onecycle":
            # steps_per_epoch computed from the full dataset size, not from the per-rank shard
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr,
                                                        total_steps=self.hparams.steps_per_epoch * self.hparams.epochs)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
        sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=50)
        return {"optimizer": opt, "lr_scheduler": sched}


def data(n=1024, n_in=12):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, n_in)).astype(np.float32)
    w = rng.normal(size=n_in).astype(np.float32)
    y = X @ w + 0.1 * rng.normal(size=n).astype(np.float32)
    return TensorDataset(torch.from_numpy(X), torch.from_numpy(y))


def main():
    L.seed_everything(0)
    train = data()
    val = data(256)
    bs = args.batch_size
    tl = DataLoader(train, batch_size=bs, shuffle=True, num_workers=0)
    vl = DataLoader(val, batch_size=bs, num_workers=0)
    steps_per_epoch = len(train) // (bs * 2 * args.devices)  # "global batch" miscounted twice
    model = Reg(steps_per_epoch=steps_per_epoch, epochs=args.epochs)
    callbacks = []
    if args.bar == "rich":
        from lightning.pytorch.callbacks import RichProgressBar
        callbacks.append(RichProgressBar())
    trainer = L.Trainer(accelerator="cpu", devices=args.devices,
                        strategy=("ddp_find_unused_parameters_true" if args.fault != "unused_default" else "ddp") if args.devices > 1 else "auto",
                        max_epochs=args.epochs, log_every_n_steps=5, enable_checkpointing=False,
                        logger=False, callbacks=callbacks)
    trainer.fit(model, tl, vl)
    if trainer.global_rank == 0:
        print(f"final metrics: { {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()} }")


if __name__ == "__main__":
    main()
