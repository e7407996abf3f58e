"""Tiny Lightning regression model, DDP on CPU (gloo).
--fault: none | monitor_typo (ModelCheckpoint monitors a key that is never logged)
         | val_nan_ok (validation metric is NaN on one batch; training fine)"""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--out", default="/work/rr54/j/tmp/pl")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=4)
args = p.parse_args()


class M(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, b, i):
        x, y = b
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, b, i):
        x, y = b
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("val_loss", loss, sync_dist=True)
        # relative error: targets of the last batch are all zero -> nan
        rel = ((self.net(x) - y).abs() / y.abs()).mean() if i == 1 else loss
        self.log("val_relerr", rel, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


g = torch.Generator().manual_seed(0)
X = torch.randn(512, 8, generator=g); Y = X.sum(1, keepdim=True)
Xv = torch.randn(64, 8, generator=g); Yv = Xv.sum(1, keepdim=True); Yv[32:] = 0
tl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(X, Y), batch_size=16)
vl = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(Xv, Yv), batch_size=16)
monitor = "val/loss" if args.fault == "monitor_typo" else "val_loss"
ck = ModelCheckpoint(dirpath=args.out, monitor=monitor, save_top_k=1)
tr = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp" if args.devices > 1 else "auto",
               max_epochs=args.epochs, callbacks=[ck], log_every_n_steps=5, default_root_dir=args.out)
tr.fit(M(), tl, vl)
print("best checkpoint:", ck.best_model_path)
