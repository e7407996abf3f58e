"""Family: PyTorch Lightning training in a notebook.
Usage: python nb_lightning.py --fault {none,ddp-strategy} --out NB.ipynb"""
import argparse, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nbutil import write_nb
p = argparse.ArgumentParser(); p.add_argument("--fault", default="none"); p.add_argument("--out", required=True)
a = p.parse_args(); F = a.fault
setup = """
import torch, torch.nn as nn, torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, TensorDataset
L.seed_everything(42)
X = torch.randn(2048, 16); y = (X[:, :4].sum(1) > 0).long()
train_dl = DataLoader(TensorDataset(X[:1792], y[:1792]), batch_size=64, shuffle=True)
val_dl = DataLoader(TensorDataset(X[1792:], y[1792:]), batch_size=64)
"""
mod = """
class LitClassifier(L.LightningModule):
    def __init__(self, lr=1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
    def forward(self, x): return self.net(x)
    def training_step(self, batch, _):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, batch, _):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
model = LitClassifier()
"""
if F == "ddp-strategy":
    tr = """
# scale out to 2 CPU processes like in the multi-GPU script
trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=2, strategy="ddp", log_every_n_steps=5)
trainer.fit(model, train_dl, val_dl)
"""
else:
    tr = """
trainer = L.Trainer(max_epochs=3, accelerator="cpu", devices=1, log_every_n_steps=5, enable_progress_bar=True)
trainer.fit(model, train_dl, val_dl)
print(trainer.callback_metrics)
"""
write_nb(["md:# Lightning baseline", setup, mod, tr], a.out)
