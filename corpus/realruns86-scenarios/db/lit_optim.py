"""Lightning regression model with AdamW + ReduceLROnPlateau, CPU DDP (gloo).

--monitor KEY    metric the plateau scheduler follows (val_loss is logged in validation)
--devices N      CPU processes (strategy ddp)
"""
import argparse
import os
import warnings

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--monitor", default="val_loss")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--wd-frozen", action="store_true", help="freeze encoder after building optimizer groups")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.encoder = nn.Sequential(nn.Linear(20, 64), nn.ReLU())
        self.head = nn.Linear(64, 1)
        if args.wd_frozen:
            self.encoder.requires_grad_(False)

    def forward(self, x):
        return self.head(self.encoder(x))

    def training_step(self, batch, _):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), y), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        # weight decay applied to every parameter, including the frozen encoder
        opt = torch.optim.AdamW(self.parameters(), lr=3e-3, weight_decay=0.05)
        sch = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sch, "monitor": args.monitor}}


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, generator=g)
    y = x[:, :3].sum(1, keepdim=True) + 0.1 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


if __name__ == "__main__":
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp", max_epochs=args.epochs,
                        log_every_n_steps=5, enable_checkpointing=False, logger=False)
    trainer.fit(Reg(), DataLoader(data(512, 0), batch_size=32, shuffle=True),
                DataLoader(data(128, 1), batch_size=64))
    if trainer.global_rank == 0:
        print("final metrics:", {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()})
