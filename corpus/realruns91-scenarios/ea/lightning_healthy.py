"""Tiny Lightning DDP run on CPU (2 processes, gloo). Healthy, but noisy."""
import argparse
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--strategy", default="ddp")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
        self.unused_proj = nn.Linear(32, 32)   # kept for a future ablation

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
    g = torch.Generator().manual_seed(0)
    X = torch.randn(256, 10, generator=g)
    Y = X.sum(1, keepdim=True)
    ds = TensorDataset(X, Y)
    tl = DataLoader(ds, batch_size=16, shuffle=True)
    vl = DataLoader(ds, batch_size=64)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=args.strategy,
                        max_epochs=args.epochs, log_every_n_steps=2,
                        default_root_dir="/work/rr91/ea/tmp/lightning_runs",
                        enable_checkpointing=False, logger=False)
    trainer.fit(Reg(), tl, vl)
    if trainer.global_rank == 0:
        print("final train_loss", float(trainer.callback_metrics["train_loss"]))
