"""Tiny Lightning regression run (CPU). --devices N with strategy ddp under torchrun."""
import argparse

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Reg(L.LightningModule):
    def __init__(self, lr=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, idx):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, idx):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    return TensorDataset(x, x[:, :2].sum(1, keepdim=True))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    L.seed_everything(7)
    trainer = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp" if a.devices > 1 else "auto",
                        max_epochs=a.epochs, default_root_dir="out/lit", log_every_n_steps=5)
    trainer.fit(Reg(), DataLoader(data(512, 0), batch_size=32, shuffle=True), DataLoader(data(128, 1), batch_size=64))
    print(f"best val_loss={trainer.callback_metrics.get('val_loss')}", flush=True)


if __name__ == "__main__":
    main()
