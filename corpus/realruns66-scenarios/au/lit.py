"""Lightning on CPU with a tiny MLP, noisy-but-healthy run."""
import os, argparse, torch, torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader
import sys; sys.path.insert(0, os.path.dirname(__file__))
from _common import MLP, data
p = argparse.ArgumentParser(); p.add_argument("--epochs", type=int, default=3); p.add_argument("--devices", type=int, default=1)
a = p.parse_args()
class M(L.LightningModule):
    def __init__(self):
        super().__init__(); self.net = MLP()
    def training_step(self, b, i):
        x, y = b; loss = F.cross_entropy(self.net(x), y); self.log("train_loss", loss, prog_bar=True); return loss
    def validation_step(self, b, i):
        x, y = b; self.log("val_loss", F.cross_entropy(self.net(x), y))
    def configure_optimizers(self): return torch.optim.Adam(self.parameters(), 1e-2)
if __name__ == "__main__":
    tr = L.Trainer(max_epochs=a.epochs, accelerator="cpu", devices=a.devices, strategy="ddp" if a.devices > 1 else "auto",
                   default_root_dir="/tmp/au_lit", log_every_n_steps=5, enable_checkpointing=True)
    tr.fit(M(), DataLoader(data(), batch_size=32, shuffle=True), DataLoader(data(128, seed=1), batch_size=64))
    print("best ckpt:", tr.checkpoint_callback.best_model_path)
