"""Tiny Lightning (2.x) run on CPU with DDP (gloo): EarlyStopping, ModelCheckpoint, noisy callbacks.

--fault none | unused-aux-head
--noise comma list: cb-error (a logging callback that catches and logs an exception), lr-warn, faulthandler
"""
import argparse
import faulthandler
import logging
import os
import traceback
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

import lightning as L
from lightning.pytorch.callbacks import Callback, EarlyStopping, ModelCheckpoint

log = logging.getLogger("train")


class Regressor(L.LightningModule):
    def __init__(self, hidden=32, lr=1e-2, aux_head=False, spike_step=-1):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        if aux_head:
            # auxiliary classification head for the multi-task variant (loss weight from config)
            self.aux = nn.Linear(hidden, 3)
        self.spike_step = spike_step

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        if self.global_step == self.spike_step:
            y = y * 25.0  # mis-scaled shard (targets in cm instead of m)
        loss = F.mse_loss(self(x), y)
        self.log("train_loss", loss, prog_bar=True, sync_dist=False)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        loss = F.mse_loss(self(x), y)
        self.log("val_loss", loss, prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class MetricsPush(Callback):
    """Pushes metrics to an internal dashboard; failures are logged and ignored."""

    def __init__(self, url):
        self.url = url

    def on_validation_epoch_end(self, trainer, pl_module):
        import urllib.request
        try:
            urllib.request.urlopen(self.url, data=b"{}", timeout=1)
        except OSError:
            log.error("rank %d: metrics push to %s failed (ignored)", trainer.global_rank, self.url, exc_info=True)


def make_data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 8, generator=g)
    w = torch.linspace(-1, 1, 8)
    y = (x @ w).unsqueeze(1) + 0.05 * torch.randn(n, 1, generator=g)
    return TensorDataset(x, y)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--devices", type=int, default=2)
    p.add_argument("--epochs", type=int, default=30)
    p.add_argument("--fault", default="none")
    p.add_argument("--noise", default="")
    p.add_argument("--patience", type=int, default=3)
    p.add_argument("--spike-step", type=int, default=-1)
    args = p.parse_args()
    noise = set(args.noise.split(",")) if args.noise else set()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if "faulthandler" in noise:
        faulthandler.dump_traceback_later(4.0, repeat=True)
    L.seed_everything(7)
    train = DataLoader(make_data(512, 0), batch_size=32, shuffle=True)
    val = DataLoader(make_data(128, 1), batch_size=64)
    model = Regressor(aux_head=(args.fault == "unused-aux-head"), spike_step=args.spike_step)
    cbs = [EarlyStopping(monitor="val_loss", patience=args.patience, mode="min", verbose=True),
           ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"), monitor="val_loss", save_top_k=1, verbose=True)]
    if "cb-error" in noise:
        cbs.append(MetricsPush("http://127.0.0.1:9/push"))
    trainer = L.Trainer(
        accelerator="cpu", devices=args.devices, strategy="ddp" if args.devices > 1 else "auto",
        max_epochs=args.epochs, callbacks=cbs, default_root_dir=args.out, log_every_n_steps=5,
        enable_progress_bar=True,
    )
    trainer.fit(model, train, val)
    if trainer.global_rank == 0:
        print(f"best checkpoint: {trainer.checkpoint_callback.best_model_path} "
              f"val_loss={trainer.checkpoint_callback.best_model_score}")


if __name__ == "__main__":
    main()
