"""Tiny Lightning run, healthy, with the usual Lightning warnings."""
import os, torch, torch.nn as nn, lightning as L
from torch.utils.data import DataLoader, TensorDataset
class Lit(L.LightningModule):
    def __init__(s):
        super().__init__(); s.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    def training_step(s, b, i):
        x, y = b; loss = nn.functional.cross_entropy(s.net(x), y); s.log("train_loss", loss, prog_bar=True); return loss
    def validation_step(s, b, i):
        x, y = b; s.log("val_loss", nn.functional.cross_entropy(s.net(x), y))
    def configure_optimizers(s): return torch.optim.Adam(s.parameters(), 1e-3)
torch.manual_seed(0); X = torch.randn(320, 16); Y = X[:, :4].argmax(1)
dl = DataLoader(TensorDataset(X, Y), batch_size=32); vdl = DataLoader(TensorDataset(X[:64], Y[:64]), batch_size=32)
tr = L.Trainer(max_epochs=2, accelerator="cpu", devices=1, log_every_n_steps=50, default_root_dir="/work/rr53/e/tmp/lit", enable_checkpointing=True)
tr.fit(Lit(), dl, vdl)
print("fit finished:", tr.state.status)
