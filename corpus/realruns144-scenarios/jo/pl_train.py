"""Lightning regression model, DDP on CPU (Lightning launches the extra rank itself).

--monitor NAME : metric the EarlyStopping/ModelCheckpoint callbacks watch (the module logs `valid_loss`)
"""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--monitor", default="valid_loss")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--root", default="pl_out")
a = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))

    def training_step(self, b, i):
        x, y = b
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, b, i):
        x, y = b
        self.log("valid_loss", nn.functional.mse_loss(self.net(x), y), sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


if __name__ == "__main__":
    L.seed_everything(7)
    x = torch.randn(512, 8); y = x[:, :1] * 2 + 0.1 * torch.randn(512, 1)
    tr = DataLoader(TensorDataset(x[:448], y[:448]), batch_size=32)
    va = DataLoader(TensorDataset(x[448:], y[448:]), batch_size=32)
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", max_epochs=a.epochs,
                        default_root_dir=a.root, log_every_n_steps=5,
                        callbacks=[EarlyStopping(monitor=a.monitor, patience=2),
                                   ModelCheckpoint(monitor=a.monitor, save_top_k=1)])
    trainer.fit(Reg(), tr, va)
    print(f"rank {trainer.global_rank}: best checkpoint {trainer.checkpoint_callback.best_model_path}")
