"""Lightning 2.x classifier on synthetic data. --fault: none, es_metric (EarlyStopping monitors a
metric name the module never logs), val_interval (val_check_interval larger than the epoch)."""
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
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--root", default="scratch/lit")
args = p.parse_args()


class LitClf(L.LightningModule):
    def __init__(self, d=20, k=3, lr=3e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(d, 64), nn.ReLU(), nn.Linear(64, k))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, _):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        logits = self(x)
        self.log("valid_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("valid_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5)
        return [opt], [sched]


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, generator=g)
    w = torch.randn(20, 3, generator=torch.Generator().manual_seed(0))
    y = (x @ w + 0.5 * torch.randn(n, 3, generator=g)).argmax(1)
    return TensorDataset(x, y)


def main():
    L.seed_everything(42)
    train = DataLoader(data(1600, 1), batch_size=64, shuffle=True)
    val = DataLoader(data(320, 2), batch_size=64)
    ckpt = ModelCheckpoint(dirpath=os.path.join(args.root, "ckpts"), monitor="valid_loss", save_top_k=1)
    callbacks = [ckpt]
    kw = {}
    if args.fault == "es_metric":
        callbacks.append(EarlyStopping(monitor="val_loss", patience=3, mode="min"))
    else:
        callbacks.append(EarlyStopping(monitor="valid_loss", patience=3, mode="min"))
    if args.fault == "val_interval":
        kw["val_check_interval"] = 500  # meant 'every 500 steps' on the full dataset
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, callbacks=callbacks,
                        default_root_dir=args.root, log_every_n_steps=50 if args.fault == "none" else 10, enable_progress_bar=True, **kw)
    model = LitClf()
    trainer.fit(model, train, val)
    print("best checkpoint:", ckpt.best_model_path, "score:", ckpt.best_model_score)


if __name__ == "__main__":
    main()
