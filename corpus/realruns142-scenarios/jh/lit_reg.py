"""Lightning regression trainer. --fault none|ckpt-missing|logger-dir|wandb"""
import argparse, os, warnings
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.loggers import CSVLogger

class Reg(L.LightningModule):
    def __init__(self, hidden=32, lr=1e-2):
        super().__init__(); self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(8, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.aux = nn.Linear(8, 1)  # kept for an old experiment, not used in forward
    def training_step(self, b, i):
        x, y = b; loss = nn.functional.mse_loss(self.net(x), y); self.log("train_loss", loss, prog_bar=True); return loss
    def validation_step(self, b, i):
        x, y = b; self.log("val_loss", nn.functional.mse_loss(self.net(x), y), prog_bar=True, sync_dist=True)
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none"); p.add_argument("--devices", type=int, default=2)
    p.add_argument("--epochs", type=int, default=3); p.add_argument("--ckpt", default=None)
    p.add_argument("--logdir", default="/work/rr142/jh/out/lit")
    a = p.parse_args()
    L.seed_everything(0)
    g = torch.Generator().manual_seed(0); x = torch.randn(1024, 8, generator=g); y = x.sum(1, keepdim=True) * 0.3
    tr = DataLoader(TensorDataset(x[:896], y[:896]), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(x[896:], y[896:]), batch_size=64)
    if a.fault == "wandb":
        from lightning.pytorch.loggers import WandbLogger
        logger = WandbLogger(project="reg-sweep", save_dir=a.logdir)
    else:
        logger = CSVLogger(a.logdir, name="reg")
    strategy = "ddp_find_unused_parameters_true" if a.devices > 1 else "auto"
    tr_ = L.Trainer(accelerator="cpu", devices=a.devices, strategy=strategy, max_epochs=a.epochs, logger=logger,
                    log_every_n_steps=5, enable_checkpointing=True, default_root_dir=a.logdir)
    tr_.fit(Reg(), tr, va, ckpt_path=a.ckpt)
