"""Lightning training on CPU (tiny regression model), used for signal / healthy-warning scenarios."""
import argparse, os, time, warnings
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--samples", type=int, default=2048)
p.add_argument("--ckpt-dir", default="lit_ckpts")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--devices", type=int, default=1)
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 128), nn.Tanh(), nn.Linear(128, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        if args.step_sleep:
            time.sleep(args.step_sleep)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self.net(x), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    torch.manual_seed(0)
    x = torch.randn(args.samples, 32); y = x[:, :4].sum(1, keepdim=True)
    tr = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=args.workers)
    va = DataLoader(TensorDataset(x[:256], y[:256]), batch_size=64, num_workers=args.workers)
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices, default_root_dir=args.ckpt_dir,
                        log_every_n_steps=10, enable_progress_bar=True)
    trainer.fit(Reg(), tr, va)
    print("fit finished, best ckpt:", trainer.checkpoint_callback.best_model_path)
