"""Lightning DDP (CPU, gloo) regression model; healthy run with Lightning's usual warnings."""
import argparse
import lightning as L
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--max-epochs", type=int, default=3)
p.add_argument("--precision", default="32-true")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    L.seed_everything(0)
    X = torch.randn(2048, 16)
    Y = X.sum(1, keepdim=True)
    tr = DataLoader(TensorDataset(X[:1792], Y[:1792]), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(X[1792:], Y[1792:]), batch_size=64)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp", max_epochs=args.max_epochs,
                        default_root_dir="/work/rr125/hj/runs/pl", log_every_n_steps=10,
                        precision=args.precision, num_sanity_val_steps=2)
    trainer.fit(Reg(), tr, va)
