"""Lightning runs (CPU, ddp on gloo or single device) with the progress bar showing the loss.

--case:
  diverge    SGD with nesterov momentum and an lr range test left at its top value -> loss blows up (finite);
             EarlyStopping(divergence_threshold) stops the run
  nan-stop   EarlyStopping(check_finite=True): val loss becomes NaN after a bf16 autocast overflow in a custom
             sum-of-squares loss
  healthy    ddp on 2 CPU ranks, noisy but normal run
"""
import argparse, math, os, warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping

p = argparse.ArgumentParser()
p.add_argument("--case", default="healthy")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=8)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--root", default="/tmp/jf_lightning")
args = p.parse_args()
torch.set_num_threads(1)
L.seed_everything(42)


def make_data(n=2048, d=20):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(n, d, generator=g)
    w = torch.randn(d, generator=g)
    y = (x @ w + 0.3 * torch.randn(n, generator=g))
    return torch.utils.data.TensorDataset(x, y)


class Reg(L.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(20, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(), nn.Linear(128, 1))

    def _loss(self, batch):
        x, y = batch
        pred = self.net(x).squeeze(-1)
        if args.case == "nan-stop":
            with torch.autocast("cpu", dtype=torch.bfloat16):
                # energy-style loss: squared error scaled by exp of the prediction magnitude
                return (torch.exp(pred.abs()) * (pred - y) ** 2).mean()
        return F.mse_loss(pred, y)

    def training_step(self, batch, i):
        loss = self._loss(batch)
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True, sync_dist=False)
        return loss

    def validation_step(self, batch, i):
        self.log("val_loss", self._loss(batch), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9, nesterov=True)


ds = make_data()
tr, va = torch.utils.data.random_split(ds, [1792, 256], generator=torch.Generator().manual_seed(0))
dl_tr = torch.utils.data.DataLoader(tr, batch_size=64, shuffle=True)
dl_va = torch.utils.data.DataLoader(va, batch_size=128)

cbs = []
if args.case == "diverge":
    cbs.append(EarlyStopping(monitor="val_loss", mode="min", patience=100, divergence_threshold=1e4,
                             verbose=True))
elif args.case == "nan-stop":
    cbs.append(EarlyStopping(monitor="val_loss", mode="min", patience=5, check_finite=True, verbose=True))

trainer = L.Trainer(
    accelerator="cpu",
    devices=args.devices,
    strategy="ddp" if args.devices > 1 else "auto",
    max_epochs=args.epochs,
    default_root_dir=args.root,
    callbacks=cbs,
    log_every_n_steps=5,
    enable_checkpointing=False,
    logger=False,
)
model = Reg(args.lr)
trainer.fit(model, dl_tr, dl_va)
if trainer.global_rank == 0:
    print(f"fit finished: epoch={trainer.current_epoch} global_step={trainer.global_step} "
          f"should_stop={trainer.should_stop} metrics={ {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()} }", flush=True)
