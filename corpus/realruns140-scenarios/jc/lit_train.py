"""Lightning regression model; flags select warnings, a divergent learning rate or a bad trainer setting."""
import argparse
import os
import warnings

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--out", default="work/lit")
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--devices", type=int, default=1)
p.add_argument("--val-every", type=float, default=1.0)
p.add_argument("--early-stop", action="store_true")
p.add_argument("--optim", default="adam")
args = p.parse_args()

L.seed_everything(7)
g = torch.Generator().manual_seed(0)
X = torch.randn(1024, 32, generator=g)
w = torch.randn(32, 1, generator=g)
Y = X @ w + 0.05 * torch.randn(1024, 1, generator=g)
train = DataLoader(TensorDataset(X[:896], Y[:896]), batch_size=32, shuffle=True)
val = DataLoader(TensorDataset(X[896:], Y[896:]), batch_size=64)


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.net(x), y), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        if args.optim == "sgd":
            return torch.optim.SGD(self.parameters(), lr=args.lr, momentum=0.9)
        return torch.optim.Adam(self.parameters(), lr=args.lr)


cbs = [ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"), monitor="val_loss", save_top_k=1)]
if args.early_stop:
    cbs.append(EarlyStopping(monitor="train_loss", patience=50, check_finite=True, check_on_train_epoch_end=True))
trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices,
                    strategy="ddp" if args.devices > 1 else "auto", default_root_dir=args.out,
                    callbacks=cbs, val_check_interval=args.val_every, log_every_n_steps=5,
                    enable_progress_bar=True)
trainer.fit(Reg(), train, val)
print("best checkpoint:", cbs[0].best_model_path, "best val_loss:", cbs[0].best_model_score)
