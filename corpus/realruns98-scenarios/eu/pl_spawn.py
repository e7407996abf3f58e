"""Lightning Trainer with strategy='ddp_spawn' (processes started by torch.multiprocessing spawn).

--fault noguard : the script calls trainer.fit at module level (no __main__ guard)
--fault lambda  : the DataModule keeps a lambda transform (not picklable for spawn)
--fault none    : healthy
"""
import argparse
import os
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset

import lightning as L
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.loggers import CSVLogger

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--max-epochs", type=int, default=2)
p.add_argument("--out", default="/tmp/eu_runs/spawn")
args = p.parse_args()


class TxDataset(Dataset):
    def __init__(self, n, transform):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 8, generator=g)
        self.y = (self.x.sum(1) > 0).long()
        self.transform = transform

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.transform(self.x[i]), self.y[i]


def standardize(x):
    return (x - x.mean()) / (x.std() + 1e-6)


class DM(L.LightningDataModule):
    def __init__(self):
        super().__init__()
        if args.fault == "lambda":
            self.transform = lambda x: (x - x.mean()) / (x.std() + 1e-6)
        else:
            self.transform = standardize

    def setup(self, stage=None):
        self.train = TxDataset(256, self.transform)
        self.val = TxDataset(64, self.transform)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=16, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=16)


class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 2))

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", F.cross_entropy(self.net(x), y), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def main():
    trainer = L.Trainer(
        accelerator="cpu", devices=args.devices,
        strategy=DDPStrategy(start_method="spawn", process_group_backend="gloo", timeout=timedelta(seconds=20)),
        max_epochs=args.max_epochs, logger=CSVLogger(args.out), enable_checkpointing=False,
        log_every_n_steps=4,
    )
    trainer.fit(Net(), datamodule=DM())
    print("fit finished, global_step =", trainer.global_step)


if args.fault == "noguard":
    # quick experiment script: no __main__ guard
    main()
elif __name__ == "__main__":
    main()
