"""Tiny Lightning regression model; DDP on CPU with gloo (Lightning launches the extra processes)."""
import argparse, os
import torch, torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--out", default="/work/rr98/ex/tmp/lit_out")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 1))
        self.unused_proj = nn.Linear(64, 64)  # left over from an older head, not used in forward

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def loaders():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1200, 16, generator=g)
    y = x[:, :1] * 2 - x[:, 1:2] + 0.05 * torch.randn(1200, 1, generator=g)
    tr, va = TensorDataset(x[:1000], y[:1000]), TensorDataset(x[1000:], y[1000:])
    return DataLoader(tr, batch_size=32, shuffle=True), DataLoader(va, batch_size=64)


if __name__ == "__main__":
    L.seed_everything(0)
    tr, va = loaders()
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp_find_unused_parameters_true",
                        max_epochs=args.epochs, default_root_dir=args.out, log_every_n_steps=50,
                        enable_model_summary=True)
    trainer.fit(Reg(), tr, va)
    if trainer.is_global_zero:
        print("best/last checkpoint:", trainer.checkpoint_callback.last_model_path or trainer.checkpoint_callback.best_model_path)
