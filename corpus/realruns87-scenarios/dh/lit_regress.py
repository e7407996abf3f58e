"""Lightning regression model (CPU, ddp strategy over gloo or single process).

--fault: none | monitor (EarlyStopping / ModelCheckpoint monitor a metric that is never logged)
         | clamp (weight clamping without no_grad in on_train_batch_end)
"""
import argparse, os, warnings
import torch
import torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--root", default="out/lit")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(10, 32), nn.Tanh(), nn.Linear(32, 1))
    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val/mse", nn.functional.mse_loss(self.net(x), y), sync_dist=True)
    def on_train_batch_end(self, outputs, batch, i):
        if args.fault == "clamp":
            for prm in self.net.parameters():
                prm.clamp_(-0.5, 0.5)   # weight clipping, forgot torch.no_grad()
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


if __name__ == "__main__":
    L.seed_everything(7)
    x = torch.randn(256, 10); y = x[:, :1] * 2 + 0.1 * torch.randn(256, 1)
    tr = DataLoader(TensorDataset(x[:192], y[:192]), batch_size=16, shuffle=True)
    va = DataLoader(TensorDataset(x[192:], y[192:]), batch_size=16)
    cbs = []
    if args.fault == "monitor":
        cbs = [EarlyStopping(monitor="val_loss", patience=2),
               ModelCheckpoint(dirpath=os.path.join(args.root, "ckpt"), monitor="val_loss")]
    trainer = L.Trainer(accelerator="cpu", devices=args.devices,
                        strategy="ddp" if args.devices > 1 else "auto",
                        max_epochs=args.epochs, default_root_dir=args.root, callbacks=cbs,
                        log_every_n_steps=4, enable_progress_bar=True)
    trainer.fit(Reg(), tr, va)
    print("fit finished", flush=True)
