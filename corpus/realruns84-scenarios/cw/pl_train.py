"""Tiny Lightning classifier; --fault selects a Lightning misuse on --rank."""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import TensorDataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=3)
p.add_argument("--devices", type=int, default=1)
p.add_argument("--strategy", default="auto")
p.add_argument("--out", default="/work/rr84/cw/out/pl")
a = p.parse_args()

class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 3))
    def training_step(self, batch, i):
        x, y = batch
        me = self.global_rank == a.rank
        if a.fault == "nograd" and me and self.global_step >= a.step:
            with torch.no_grad():   # "cheap" path for logging reused as the loss
                logits = self.net(x)
        else:
            logits = self.net(x)
        loss = nn.functional.cross_entropy(logits, y)
        if a.fault == "log_vector" and me and self.global_step >= a.step:
            self.log("train/per_class", logits.softmax(-1).mean(0))
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_acc", (self.net(x).argmax(-1) == y).float().mean(), sync_dist=True)
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)

torch.manual_seed(0)
X = torch.randn(320, 8); Y = (X[:, 0] > 0).long() + (X[:, 1] > 1).long()
tr = DataLoader(TensorDataset(X[:256], Y[:256]), batch_size=16, shuffle=True)
va = DataLoader(TensorDataset(X[256:], Y[256:]), batch_size=32)
ck = ModelCheckpoint(dirpath=a.out, monitor="val_loss" if a.fault == "monitor" else "val_acc", mode="max")
trainer = L.Trainer(max_epochs=2, accelerator="cpu", devices=a.devices, strategy=a.strategy,
                    callbacks=[ck], logger=L.pytorch.loggers.CSVLogger(a.out), log_every_n_steps=4)
trainer.fit(Net(), tr, va)
print("best:", ck.best_model_path, ck.best_model_score)
