"""Lightning: train, checkpoint, resume from ckpt_path (CPU, offline)."""
import argparse, torch, torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--root", required=True)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--ckpt-path", default=None)
args = p.parse_args()

class Lit(L.LightningModule):
    def __init__(self, hidden=32):
        super().__init__(); self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 4))
    def training_step(self, b, i):
        x, y = b; loss = nn.functional.cross_entropy(self.net(x), y); self.log("train_loss", loss, prog_bar=True); return loss
    def validation_step(self, b, i):
        x, y = b; self.log("val_loss", nn.functional.cross_entropy(self.net(x), y))
    def configure_optimizers(self):
        o = torch.optim.AdamW(self.parameters(), lr=1e-3)
        return {"optimizer": o, "lr_scheduler": torch.optim.lr_scheduler.StepLR(o, 1, 0.9)}

g = torch.Generator().manual_seed(0)
ds = TensorDataset(torch.randn(256, 16, generator=g), torch.randint(0, 4, (256,), generator=g))
tl, vl = DataLoader(ds, batch_size=32, shuffle=True), DataLoader(ds, batch_size=64)
L.seed_everything(0)
trainer = L.Trainer(default_root_dir=args.root, max_epochs=args.epochs, accelerator="cpu", devices=1, log_every_n_steps=2)
trainer.fit(Lit(), tl, vl, ckpt_path=args.ckpt_path)
print("best/last checkpoint:", trainer.checkpoint_callback.best_model_path)
