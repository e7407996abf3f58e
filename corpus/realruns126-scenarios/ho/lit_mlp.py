"""Lightning MLP classifier (CPU, ddp under torchrun or spawned by Lightning)."""
import argparse
import os

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--out", default="runs/lit_out")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--val-key", default="val_loss", help="name the module logs the validation loss under")
p.add_argument("--monitor-key", default="val_loss")
p.add_argument("--resume-from", default="")
a = p.parse_args()


class Clf(L.LightningModule):
    def __init__(self, hidden):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, 4))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log(a.val_key, F.cross_entropy(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


def loader(n, seed, shuffle):
    g = torch.Generator().manual_seed(seed)
    x = torch.rand(n, 32, generator=g)
    y = (x[:, :4].argmax(-1))
    return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=shuffle)


if __name__ == "__main__":
    L.seed_everything(0)
    ckpt = ModelCheckpoint(dirpath=a.out, monitor=a.monitor_key, mode="min", save_top_k=1)
    trainer = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp" if a.devices > 1 else "auto",
                        max_epochs=a.epochs, callbacks=[ckpt, EarlyStopping(monitor=a.monitor_key, patience=5)],
                        log_every_n_steps=5, default_root_dir=a.out, enable_progress_bar=True)
    trainer.fit(Clf(a.hidden), loader(1024, 0, True), loader(256, 1, False), ckpt_path=a.resume_from or None)
    print("best checkpoint:", ckpt.best_model_path)
