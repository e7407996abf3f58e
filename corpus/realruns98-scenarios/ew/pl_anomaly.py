"""Lightning module with a hand-written focal-style loss; Trainer(detect_anomaly=True), DDP on CPU (gloo)."""
import argparse, datetime, os
import torch, torch.nn as nn, torch.nn.functional as F
import lightning as L
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--devices", type=int, default=2); p.add_argument("--epochs", type=int, default=3)
p.add_argument("--eps", type=float, default=0.0); p.add_argument("--anomaly", type=int, default=1)
args = p.parse_args()

class Lit(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
    def training_step(self, batch, i):
        x, y = batch
        prob = torch.sigmoid(self.net(x) * 8)          # sharp sigmoid saturates to exactly 0/1 in float32
        target = F.one_hot(y, 4).float()
        pt = prob * target + (1 - prob) * (1 - target)
        loss = (-(1 - pt) ** 2 * torch.log(pt + args.eps)).mean()   # focal loss, eps "not needed"
        self.log("train_loss", loss, prog_bar=True, sync_dist=False)
        return loss
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=5e-2)

if __name__ == "__main__":
    L.seed_everything(0)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 16, generator=g) * 1.5; y = (x[:, :4]).argmax(1)
    x[1000:1004] *= 200.0  # a few raw (unnormalised) sensor rows slipped into the data
    dl = DataLoader(TensorDataset(x, y), batch_size=64, shuffle=True)
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices,
                        strategy=DDPStrategy(timeout=datetime.timedelta(seconds=30)) if args.devices > 1 else "auto", detect_anomaly=bool(args.anomaly),
                        enable_checkpointing=False, logger=False, log_every_n_steps=5)
    trainer.fit(Lit(), dl)
    print("fit finished, global_step", trainer.global_step)
