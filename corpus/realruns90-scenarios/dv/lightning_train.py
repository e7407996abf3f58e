"""Tiny LightningModule regression run; --logger and --accelerator select the configuration."""
import argparse
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--logger", default="csv", choices=["csv", "tensorboard"])
p.add_argument("--accelerator", default="cpu")
p.add_argument("--devices", default="1")
p.add_argument("--strategy", default="auto")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--out", default="/work/rr90/dv/runs/pl_out")
a = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


g = torch.Generator().manual_seed(0)
X = torch.randn(512, 16, generator=g); Y = X[:, :1] * 0.5 + 0.1 * torch.randn(512, 1, generator=g)
train = DataLoader(TensorDataset(X[:448], Y[:448]), batch_size=32, shuffle=True)
val = DataLoader(TensorDataset(X[448:], Y[448:]), batch_size=32)

if a.logger == "tensorboard":
    from lightning.pytorch.loggers import TensorBoardLogger
    logger = TensorBoardLogger(a.out, name="reg")
else:
    from lightning.pytorch.loggers import CSVLogger
    logger = CSVLogger(a.out, name="reg")

devices = int(a.devices) if a.devices.isdigit() else a.devices
trainer = L.Trainer(accelerator=a.accelerator, devices=devices, strategy=a.strategy, max_epochs=a.epochs,
                    logger=logger, default_root_dir=a.out, log_every_n_steps=5)
trainer.fit(Reg(), train, val)
print("final val_loss", trainer.callback_metrics.get("val_loss"))
