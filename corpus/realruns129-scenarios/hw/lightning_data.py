import argparse, os, torch, torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, TensorDataset
p = argparse.ArgumentParser(); p.add_argument("--ndev", type=int, default=2); p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
class M(L.LightningModule):
    def __init__(s): super().__init__(); s.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
    def training_step(s, b, i):
        x, y = b; loss = nn.functional.cross_entropy(s.net(x), y); s.log("train_loss", loss, prog_bar=True); return loss
    def validation_step(s, b, i):
        x, y = b; s.log("val_loss", nn.functional.cross_entropy(s.net(x), y))
    def configure_optimizers(s): return torch.optim.AdamW(s.parameters(), lr=1e-3)
if __name__ == "__main__":
    g = torch.Generator().manual_seed(0)
    X = torch.randn(256, 16, generator=g); Y = torch.randint(0, 4, (256,), generator=g)
    tr = DataLoader(TensorDataset(X[:200], Y[:200]), batch_size=16, shuffle=True, num_workers=2)
    va = DataLoader(TensorDataset(X[200:], Y[200:]), batch_size=16, num_workers=2)
    t = L.Trainer(accelerator="cpu", devices=a.ndev, strategy="ddp", max_epochs=a.epochs, log_every_n_steps=5,
                  default_root_dir="lt_out", enable_checkpointing=False)
    t.fit(M(), tr, va)
    print("fit done", t.callback_metrics)
