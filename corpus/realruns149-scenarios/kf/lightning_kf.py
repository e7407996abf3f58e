"""Tiny Lightning run. --mode healthy | es_wrong_metric | ddp_healthy"""
import argparse, warnings
import torch, torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser(); p.add_argument("--mode", default="healthy"); p.add_argument("--root", default="pl_out")
a = p.parse_args()

class M(L.LightningModule):
    def __init__(self):
        super().__init__(); self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    def training_step(self, b, i):
        x, y = b; loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, b, i):
        x, y = b; self.log("val/loss", nn.functional.mse_loss(self.net(x), y))  # logged under a namespaced key
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)

L.seed_everything(0)
x = torch.randn(256, 8); y = x[:, :1] * 2
dl = DataLoader(TensorDataset(x, y), batch_size=32)
vdl = DataLoader(TensorDataset(x[:64], y[:64]), batch_size=32)
cbs = [ModelCheckpoint(dirpath=a.root + "/ckpt", monitor="val/loss")]
if a.mode == "es_wrong_metric":
    cbs.append(EarlyStopping(monitor="val_loss", patience=2))
kw = dict(max_epochs=3, default_root_dir=a.root, callbacks=cbs, accelerator="cpu", log_every_n_steps=2)
if a.mode == "ddp_healthy":
    kw.update(devices=2, strategy="ddp")
else:
    kw.update(devices=1)
trainer = L.Trainer(**kw)
trainer.fit(M(), dl, vdl)
print("best:", cbs[0].best_model_path, float(cbs[0].best_model_score))
