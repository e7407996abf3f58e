"""Lightning module (tiny MLP classifier) with ModelCheckpoint and ckpt_path resume."""
import argparse, os
from dataclasses import dataclass

import torch
import torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset


@dataclass
class OptimCfg:
    lr: float = 1e-2
    betas: tuple = (0.9, 0.99)


class Lit(L.LightningModule):
    def __init__(self, hidden=32, encoder_name="encoder", split_groups=False, optim_cfg=None):
        super().__init__()
        self.save_hyperparameters()
        self.encoder_name = encoder_name
        setattr(self, encoder_name, nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU()))
        self.head = nn.Linear(hidden, 4)
        self.loss = nn.CrossEntropyLoss()

    def forward(self, x):
        return self.head(getattr(self, self.encoder_name)(x))

    def training_step(self, batch, i):
        x, y = batch
        loss = self.loss(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        lr = self.hparams.optim_cfg.lr if self.hparams.optim_cfg is not None else 1e-2
        if self.hparams.split_groups:
            enc = getattr(self, self.encoder_name)
            return torch.optim.Adam([{"params": enc.parameters(), "lr": lr * 0.1},
                                     {"params": self.head.parameters(), "lr": lr}])
        return torch.optim.Adam(self.parameters(), lr=lr)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--root", default="pl_out")
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--hidden", type=int, default=32)
    p.add_argument("--encoder-name", default="encoder")
    p.add_argument("--split-groups", action="store_true")
    p.add_argument("--optim-dataclass", action="store_true")
    p.add_argument("--ckpt", default=None)
    args = p.parse_args()

    L.seed_everything(0)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(1024, 16, generator=g)
    Y = (X[:, 0] > 0).long() + 2 * (X[:, 1] > 0).long()
    dl = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True)
    model = Lit(hidden=args.hidden, encoder_name=args.encoder_name, split_groups=args.split_groups,
                optim_cfg=OptimCfg() if args.optim_dataclass else None)
    ckcb = ModelCheckpoint(dirpath=os.path.join(args.root, "checkpoints"), save_last=True, every_n_epochs=1)
    trainer = L.Trainer(
        accelerator="cpu", devices=args.devices, strategy="ddp" if args.devices > 1 else "auto",
        max_epochs=args.epochs, default_root_dir=args.root, callbacks=[ckcb], log_every_n_steps=10,
        enable_model_summary=True,
    )
    trainer.fit(model, dl, ckpt_path=args.ckpt)
    if trainer.is_global_zero:
        print("best/last checkpoint:", ckcb.last_model_path)


if __name__ == "__main__":
    main()
