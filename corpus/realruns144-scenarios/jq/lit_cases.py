"""Lightning module trained on CPU; --case picks the configuration.

ok_noisy        : healthy run with Lightning's usual warnings
ckpt_monitor    : ModelCheckpoint monitors 'val_acc' but the module logs 'val/acc'
log_vector      : self.log() given a per-class tensor instead of a scalar
"""
import argparse
import os
import warnings

import torch
import torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--case", default="ok_noisy")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--out", default="lit_out")
p.add_argument("--devices", type=int, default=1)
args = p.parse_args()


class Clf(L.LightningModule):
    def __init__(self, case):
        super().__init__()
        self.case = case
        self.net = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 3))
        self.save_hyperparameters()

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        logits = self.net(x)
        acc = (logits.argmax(1) == y).float().mean()
        self.log("val/loss", nn.functional.cross_entropy(logits, y))
        self.log("val/acc", acc, prog_bar=True)
        if self.case == "log_vector":
            per_class = torch.stack([((logits.argmax(1) == y) & (y == c)).float().sum() / (y == c).float().sum().clamp(min=1)
                                     for c in range(3)])
            self.log("val/per_class_acc", per_class)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


g = torch.Generator().manual_seed(0)
X = torch.randn(1024, 20, generator=g)
Y = (X[:, :3]).argmax(1)
tr = DataLoader(TensorDataset(X[:896], Y[:896]), batch_size=64, shuffle=True)
va = DataLoader(TensorDataset(X[896:], Y[896:]), batch_size=64)

cbs = []
if args.case == "ckpt_monitor":
    cbs.append(ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"), monitor="val_acc", mode="max", save_top_k=2))
else:
    cbs.append(ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"), monitor="val/acc", mode="max", save_top_k=2,
                               filename="ep{epoch}-acc{val/acc:.3f}"))
    cbs.append(EarlyStopping(monitor="val/loss", patience=5))

trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices, callbacks=cbs,
                    default_root_dir=args.out, log_every_n_steps=5, enable_progress_bar=True,
                    strategy="ddp" if args.devices > 1 else "auto")
trainer.fit(Clf(args.case), tr, va)
trainer.print(f"best checkpoint: {cbs[0].best_model_path} score={cbs[0].best_model_score}")
