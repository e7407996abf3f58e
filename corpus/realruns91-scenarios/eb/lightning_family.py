"""Tiny regression model trained with pytorch_lightning on CPU (devices=N, strategy=ddp).

--fault none        : healthy
--fault old-import  : helper import path from older Lightning releases (pytorch_lightning.utilities.distributed)
"""
import argparse
import os
import sys

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "old-import"])
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--port", default="39730")
a = p.parse_args()

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import pytorch_lightning as pl

if a.fault == "old-import":
    from pytorch_lightning.utilities.distributed import rank_zero_only
else:
    from pytorch_lightning.utilities import rank_zero_only


class Reg(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x).squeeze(1), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x).squeeze(1), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


@rank_zero_only
def banner(msg):
    print(msg, flush=True)


def main():
    os.environ.setdefault("MASTER_PORT", a.port)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 10, generator=g)
    y = x @ torch.linspace(-1, 1, 10)
    ds = TensorDataset(x, y)
    banner(f"dataset {len(ds)} samples, devices={a.devices}")
    trainer = pl.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp", max_epochs=a.epochs,
                         default_root_dir="outputs/pl_run", log_every_n_steps=4, enable_checkpointing=True)
    trainer.fit(Reg(), DataLoader(ds, batch_size=32, shuffle=True), DataLoader(ds, batch_size=64))
    banner(f"best ckpt: {trainer.checkpoint_callback.best_model_path}")


if __name__ == "__main__":
    main()
