"""Lightning classifier with validation, EarlyStopping/ModelCheckpoint callbacks and CSV logger.

--fault:
  none              healthy (default Lightning warnings: few workers, sync_dist not set, ...)
  es_monitor_key    model logs "val/loss" but EarlyStopping monitors "val_loss"
  val_interval      val_check_interval given as a step count larger than the epoch
  val_target_dtype  validation labels loaded as float (one-hot smoothing) and passed to cross_entropy with class dim
"""
import argparse, os, warnings
import torch
import torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--val-check-interval", type=float, default=1.0)
p.add_argument("--out", default="/tmp/bc_lit")
args = p.parse_args()


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(24, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        logits = self.net(x)
        if args.fault == "val_target_dtype":
            y = y.unsqueeze(1)  # labels kept as column vector by the eval collate
        loss = nn.functional.cross_entropy(logits, y)
        acc = (logits.argmax(1) == y).float().mean()
        key = "val/loss" if args.fault == "es_monitor_key" else "val_loss"
        self.log(key, loss, prog_bar=True)
        self.log("val_acc", acc)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


torch.manual_seed(0)
X = torch.randn(1200, 24)
Y = (X[:, :4]).argmax(1)
train = DataLoader(TensorDataset(X[:1000], Y[:1000]), batch_size=32, shuffle=True)
val = DataLoader(TensorDataset(X[1000:], Y[1000:]), batch_size=64)
vci = args.val_check_interval
if vci > 1:
    vci = int(vci)
trainer = L.Trainer(
    max_epochs=args.epochs, accelerator="cpu", devices=args.devices,
    strategy="ddp" if args.devices > 1 else "auto",
    logger=CSVLogger(args.out, name="lit"),
    callbacks=[EarlyStopping(monitor="val_loss", patience=2, mode="min"),
               ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"), monitor="val_acc", mode="max")],
    val_check_interval=vci, log_every_n_steps=50,
)
trainer.fit(Net(), train, val)
print("best checkpoint:", trainer.checkpoint_callback.best_model_path)
