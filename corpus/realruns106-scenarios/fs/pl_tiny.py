"""Tiny Lightning classifier, DDP on CPU (launch with torchrun)."""
import argparse
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
a = p.parse_args()

class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 10))
    def training_step(self, b, i):
        x, y = b
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, b, i):
        x, y = b
        self.log("val_loss", F.cross_entropy(self.net(x), y), on_epoch=True)
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)

g = torch.Generator().manual_seed(0)
X = torch.randn(640, 16, generator=g); Y = (X[:, :10]).argmax(1)
tr = DataLoader(TensorDataset(X[:512], Y[:512]), batch_size=16, shuffle=True)
va = DataLoader(TensorDataset(X[512:], Y[512:]), batch_size=32)
trainer = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp", max_epochs=a.epochs,
                    default_root_dir="out/pl", enable_checkpointing=False, logger=False)
trainer.fit(Net(), tr, va)
print(f"rank {trainer.global_rank}: done, callback_metrics={ {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()} }")
