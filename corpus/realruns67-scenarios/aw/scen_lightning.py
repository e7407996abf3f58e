"""Lightning family: tiny classifier, checkpoints under --root (default_root_dir)."""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from torch.utils.data import TensorDataset, DataLoader
p = argparse.ArgumentParser(); p.add_argument("--root", default="out/pl"); p.add_argument("--epochs", type=int, default=3)
p.add_argument("--devices", type=int, default=1); p.add_argument("--width", type=int, default=512)
a = p.parse_args()
class Lit(L.LightningModule):
    def __init__(self):
        super().__init__(); self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(32, a.width), nn.ReLU(), nn.Linear(a.width, 4))
    def training_step(self, b, i):
        x, y = b; loss = nn.functional.cross_entropy(self.net(x), y); self.log("train_loss", loss, prog_bar=True); return loss
    def configure_optimizers(self): return torch.optim.Adam(self.parameters(), 1e-3)
if __name__ == "__main__":
    torch.manual_seed(0); x = torch.randn(512, 32); y = x[:, :4].argmax(1)
    dl = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    tr = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp_spawn" if a.devices > 1 else "auto", max_epochs=a.epochs, default_root_dir=a.root, enable_progress_bar=True)
    tr.fit(Lit(), dl)
    print("fit finished; best ckpt:", tr.checkpoint_callback.best_model_path)
