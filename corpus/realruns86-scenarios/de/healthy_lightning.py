"""Healthy Lightning CPU-DDP run with the usual warnings."""
import os, sys, argparse, warnings
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

class LitMLP(L.LightningModule):
    def __init__(self):
        super().__init__(); self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 4))
    def training_step(self, batch, i):
        x, y = batch; loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, on_epoch=True, prog_bar=True)
        return loss
    def validation_step(self, batch, i):
        x, y = batch; self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))
    def configure_optimizers(self): return torch.optim.Adam(self.parameters(), lr=1e-3)

def main():
    p = argparse.ArgumentParser(); p.add_argument("--devices", type=int, default=2); p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--root", default="/work/rr86/de/tmp/lit")
    a = p.parse_args()
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 32, generator=g); y = (x[:, :4].argmax(1))
    tr = DataLoader(TensorDataset(x[:1792], y[:1792]), batch_size=64, shuffle=True)
    va = DataLoader(TensorDataset(x[1792:], y[1792:]), batch_size=64)
    t = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp", max_epochs=a.epochs, default_root_dir=a.root, log_every_n_steps=5)
    t.fit(LitMLP(), tr, va)
    if t.global_rank == 0: print("best:", t.checkpoint_callback.best_model_path)

if __name__ == "__main__":
    main()
