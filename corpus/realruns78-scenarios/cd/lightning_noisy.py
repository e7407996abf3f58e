"""Lightning CPU DDP run (Lightning spawns the ranks itself) with the usual warnings: few
DataLoader workers, log_every_n_steps larger than the epoch, sync_dist hint, checkpoint dir exists."""
import argparse, os
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--root", default="/tmp/rr78cd_pl")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), 1e-2)


if __name__ == "__main__":
    L.seed_everything(7)
    X = torch.randn(256, 16); Y = X[:, :1] * 2 + 0.1 * torch.randn(256, 1)
    tr = DataLoader(TensorDataset(X[:192], Y[:192]), batch_size=16, shuffle=True)
    va = DataLoader(TensorDataset(X[192:], Y[192:]), batch_size=16)
    os.makedirs(os.path.join(args.root, "ckpts"), exist_ok=True)
    open(os.path.join(args.root, "ckpts", "stale.ckpt"), "w").close()
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp", max_epochs=args.epochs,
                        default_root_dir=args.root, log_every_n_steps=50, enable_model_summary=True,
                        callbacks=[L.pytorch.callbacks.ModelCheckpoint(dirpath=os.path.join(args.root, "ckpts"))])
    trainer.fit(Reg(), tr, va)
    if trainer.global_rank == 0:
        print("best checkpoint:", trainer.checkpoint_callback.best_model_path)
