"""Lightning bf16-mixed fine-tuning on CPU, optionally warm-started from an earlier Lightning checkpoint."""
import argparse, os, warnings
import torch, torch.nn as nn, torch.nn.functional as F
import lightning as L
from torch.utils.data import TensorDataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--init-from", default=None)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--save", default=None)
p.add_argument("--devices", type=int, default=1)
args = p.parse_args()

class LitReg(L.LightningModule):
    def __init__(self, hidden=64, n_in=16):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(n_in, hidden), nn.GELU(), nn.LayerNorm(hidden), nn.Linear(hidden, 1))
    def training_step(self, batch, i):
        x, y = batch
        loss = F.mse_loss(self.net(x).squeeze(-1).float(), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", F.mse_loss(self.net(x).squeeze(-1).float(), y), prog_bar=True)
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

if __name__ == "__main__":
    L.seed_everything(7)
    X = torch.randn(512, 16); Y = X[:, :4].sum(1) + 0.1 * torch.randn(512)
    tr = DataLoader(TensorDataset(X[:448], Y[:448]), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(X[448:], Y[448:]), batch_size=64)
    if args.init_from:
        model = LitReg.load_from_checkpoint(args.init_from, hidden=args.hidden)
    else:
        model = LitReg(hidden=args.hidden)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, precision="bf16-mixed", max_epochs=args.epochs,
                        log_every_n_steps=5, default_root_dir="/work/rr69/bb/litlogs", enable_checkpointing=True)
    trainer.fit(model, tr, va)
    if args.save:
        trainer.save_checkpoint(args.save)
    print("final val_loss", float(trainer.callback_metrics["val_loss"]))
