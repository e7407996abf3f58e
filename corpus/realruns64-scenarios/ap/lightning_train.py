"""Tiny Lightning classifier on CPU with DDP (gloo) strategy."""
import argparse

import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 3))

    def training_step(self, batch, idx):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, idx):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--accelerator", default="cpu")
    p.add_argument("--strategy", default="ddp")
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    torch.manual_seed(0)
    x = torch.randn(400, 20)
    y = (x[:, :3]).argmax(1)
    dl = DataLoader(TensorDataset(x, y), batch_size=32)
    vdl = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=32)
    trainer = L.Trainer(accelerator=a.accelerator, devices=a.devices, strategy=a.strategy,
                        max_epochs=a.epochs, default_root_dir="/work/rr64/ap/out/pl",
                        enable_checkpointing=False)
    trainer.fit(Net(), dl, vdl)


if __name__ == "__main__":
    main()
