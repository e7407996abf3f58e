"""Lightning classifier on synthetic data (CPU, optional DDP via torchrun)."""
import argparse
import os
import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--root", default="work/pl_runs")
args = p.parse_args()


class Lit(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


g = torch.Generator().manual_seed(0)
X = torch.randn(1200, 20, generator=g)
Y = (X[:, :3]).argmax(1)
train = DataLoader(TensorDataset(X[:1000], Y[:1000]), batch_size=32, shuffle=True)
val = DataLoader(TensorDataset(X[1000:], Y[1000:]), batch_size=64)
trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp" if args.devices > 1 else "auto",
                    max_epochs=args.epochs, default_root_dir=args.root, log_every_n_steps=5)
trainer.fit(Lit(), train, val)
print("best/last checkpoint:", trainer.checkpoint_callback.best_model_path)
