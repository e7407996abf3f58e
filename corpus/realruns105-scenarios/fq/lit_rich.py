"""Lightning regression module trained with RichProgressBar / RichModelSummary on CPU."""
import argparse, os, warnings

import lightning as L
import torch
import torch.nn as nn
from lightning.pytorch.callbacks import RichModelSummary, RichProgressBar
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "nograd", "inplace", "valcheck"])
p.add_argument("--devices", type=int, default=1)
p.add_argument("--strategy", default="auto")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--freeze-backbone", action="store_true")
args = p.parse_args()


class GatedRegressor(L.LightningModule):
    def __init__(self, d=20, h=64, freeze_backbone=False, gate_inplace=False):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = nn.Sequential(nn.Linear(d, h), nn.SiLU(), nn.Linear(h, h))
        self.gate = nn.Linear(h, h)
        self.head = nn.Linear(h, 1)
        if freeze_backbone:
            for m in (self.backbone, self.gate, self.head):   # meant to freeze only the backbone
                m.requires_grad_(False)

    def forward(self, x):
        z = self.backbone(x)
        g = torch.sigmoid(self.gate(z))
        if self.hparams.gate_inplace:
            g.mul_(0.5)  # "temperature" applied in place to save memory
        return self.head(z * g)

    def training_step(self, batch, _):
        x, y = batch
        loss = nn.functional.mse_loss(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        self.log("val_loss", nn.functional.mse_loss(self(x), y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)


def loaders():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(640, 20, generator=g); y = x[:, :3].sum(1, keepdim=True)
    tr = DataLoader(TensorDataset(x[:512], y[:512]), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(x[512:], y[512:]), batch_size=32)
    return tr, va


if __name__ == "__main__":
    L.seed_everything(7)
    tr, va = loaders()
    model = GatedRegressor(freeze_backbone=args.freeze_backbone, gate_inplace=(args.fault == "inplace"))
    kw = {}
    if args.fault == "valcheck":
        kw["val_check_interval"] = 50   # copied from the full-size config (2,000 batches per epoch)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=args.strategy, max_epochs=args.epochs,
                        callbacks=[RichProgressBar(leave=True), RichModelSummary()], log_every_n_steps=5,
                        enable_checkpointing=True, default_root_dir="lit_runs", **kw)
    trainer.fit(model, tr, va)
    print(f"best val_loss: {trainer.callback_metrics.get('val_loss')}")
