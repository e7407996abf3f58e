"""Tiny Lightning model on CPU DDP (gloo)."""
import argparse, os, warnings
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
import lightning as L

class LitReg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y))
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)

if __name__ == "__main__":
    p = argparse.ArgumentParser(); p.add_argument("--devices", type=int, default=3); p.add_argument("--epochs", type=int, default=3)
    a = p.parse_args()
    torch.manual_seed(0)
    x = torch.randn(240, 16); y = x[:, :1] * 2 + 0.1 * torch.randn(240, 1)
    ds = TensorDataset(x, y)
    tr = DataLoader(ds, batch_size=16); va = DataLoader(TensorDataset(x[:48], y[:48]), batch_size=16)
    trainer = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp", max_epochs=a.epochs,
                        default_root_dir="/work/rr57/o/tmp/lightning", enable_checkpointing=True, log_every_n_steps=5)
    trainer.fit(LitReg(), tr, va)
    if trainer.global_rank == 0:
        print("fit finished, best ckpt:", trainer.checkpoint_callback.best_model_path)
