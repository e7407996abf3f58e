"""Tiny Lightning run (CPU, DDP via gloo, bf16-mixed) with a ModelCheckpoint callback."""
import argparse, os
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.strategies import DDPStrategy
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--precision", default="bf16-mixed")
p.add_argument("--ckpt-dir", default="ckpts/pl")
args = p.parse_args()


class Lit(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 4))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    g = torch.Generator().manual_seed(0)
    x = torch.randn(512, 32, generator=g); y = (x[:, :4].argmax(1))
    tr = DataLoader(TensorDataset(x[:448], y[:448]), batch_size=16, shuffle=True)
    va = DataLoader(TensorDataset(x[448:], y[448:]), batch_size=16)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, max_epochs=args.epochs, precision=args.precision,
                        strategy=DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=60)),
                        callbacks=[ModelCheckpoint(dirpath=args.ckpt_dir, monitor="val_loss", save_top_k=1)],
                        log_every_n_steps=5, enable_model_summary=True)
    trainer.fit(Lit(), tr, va)
    if trainer.global_rank == 0:
        print("best checkpoint:", trainer.checkpoint_callback.best_model_path)
