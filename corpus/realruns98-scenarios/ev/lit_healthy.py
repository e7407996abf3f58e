"""Lightning run on CPU with an in-memory dataset; finishes normally."""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, TensorDataset, random_split


class Model(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 3))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.net(x), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--epochs", type=int, default=3)
    args = ap.parse_args()
    L.seed_everything(7)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(600, 12, generator=g); Y = (X[:, :3].argmax(1))
    tr, va = random_split(TensorDataset(X, Y), [500, 100], generator=g)
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1,
                        default_root_dir="/tmp/ev_lit", enable_checkpointing=True)
    trainer.fit(Model(), DataLoader(tr, batch_size=64, shuffle=True, num_workers=3), DataLoader(va, batch_size=64))


if __name__ == "__main__":
    main()
