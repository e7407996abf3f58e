"""Lightning DDP on CPU (2 processes, gloo) with validation on every rank and rank-zero-only
logging of a sample prediction table."""
import argparse, warnings
import torch, torch.nn as nn
import lightning as L
from lightning.pytorch.utilities import rank_zero_only
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
        self.unused_proj = nn.Linear(32, 32)  # kept for checkpoint compatibility with v1

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x).squeeze(-1), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x).squeeze(-1), y), sync_dist=True)

    def on_validation_epoch_end(self):
        self.show_table()

    @rank_zero_only
    def show_table(self):
        x = torch.randn(3, 8)
        print("sample preds:", [round(v, 3) for v in self.net(x).squeeze(-1).tolist()], flush=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


if __name__ == "__main__":
    g = torch.Generator().manual_seed(0)
    X = torch.randn(512, 8, generator=g); Y = X.sum(1) * 0.3
    tr = DataLoader(TensorDataset(X[:448], Y[:448]), batch_size=32)
    va = DataLoader(TensorDataset(X[448:], Y[448:]), batch_size=32)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp_find_unused_parameters_true",
                        max_epochs=args.epochs, enable_checkpointing=False, logger=False)
    trainer.fit(Reg(), tr, va)
