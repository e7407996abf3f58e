"""Lightning fit with checkpoint callback monitoring a metric (producer cv)."""
import argparse, torch, torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import TensorDataset, DataLoader
p = argparse.ArgumentParser(); p.add_argument("--monitor", default="val_loss"); args = p.parse_args()
class Reg(L.LightningModule):
    def __init__(self):
        super().__init__(); self.net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    def training_step(self, b, i):
        x, y = b; loss = nn.functional.mse_loss(self.net(x), y); self.log("train_loss", loss, prog_bar=True); return loss
    def validation_step(self, b, i):
        x, y = b; self.log("valid/loss", nn.functional.mse_loss(self.net(x), y))
    def configure_optimizers(self): return torch.optim.SGD(self.parameters(), lr=0.05)
g = torch.Generator().manual_seed(0); X = torch.randn(256, 8, generator=g); Y = X.sum(1, keepdim=True)
dl = DataLoader(TensorDataset(X, Y), batch_size=32); vdl = DataLoader(TensorDataset(X[:64], Y[:64]), batch_size=32)
ck = ModelCheckpoint(dirpath="/work/rr84/cv/data/lck", monitor=args.monitor, mode="min")
tr = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, callbacks=[ck], logger=False, enable_model_summary=True)
tr.fit(Reg(), dl, vdl)
print("best:", ck.best_model_path)
