"""Lightning regression module; --fault picks a loss-curve bug."""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import TQDMProgressBar
from torch.utils.data import DataLoader, TensorDataset
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--lr", type=float, default=0.01)
p.add_argument("--devices", type=int, default=1)
a = p.parse_args()
g = torch.Generator().manual_seed(0)
X = torch.randn(2048, 16, generator=g)
W = torch.randn(16, 1, generator=g) / 4
Y = X @ W + 0.05 * torch.randn(2048, 1, generator=g)
if a.fault == "target_log":
    # targets are log-transformed counts; a few negative rows slipped in
    Y = Y.abs() + 1.0
    Y[1900] = -0.5
class M(L.LightningModule):
    def __init__(s):
        super().__init__(); s.net = nn.Sequential(nn.Linear(16, 64), nn.Tanh(), nn.Linear(64, 1))
    def training_step(s, b, i):
        x, y = b
        if a.fault == "target_log":
            y = torch.log(y)
        loss = nn.functional.mse_loss(s.net(x), y)
        s.log("train_loss", loss, prog_bar=True)
        s.log("lr", s.trainer.optimizers[0].param_groups[0]["lr"], prog_bar=True)
        return loss
    def configure_optimizers(s):
        opt = torch.optim.SGD(s.parameters(), lr=a.lr, momentum=0.9)
        if a.fault == "sched_per_step":
            sch = torch.optim.lr_scheduler.ExponentialLR(opt, gamma=0.5)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sch, "interval": "step"}}
        return opt
dl = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=False, num_workers=0)
tr = L.Trainer(max_epochs=a.epochs, accelerator="cpu", devices=a.devices, logger=False, enable_checkpointing=False,
               log_every_n_steps=10, callbacks=[TQDMProgressBar(refresh_rate=8)], strategy="ddp" if a.devices > 1 else "auto")
tr.fit(M(), dl)
print("fit finished")
