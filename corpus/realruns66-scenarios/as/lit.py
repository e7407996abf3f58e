"""Lightning LSTM sequence regressor/classifier on synthetic sensor sequences (CPU, optionally DDP on 2 procs)."""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "fixed-hidden"])
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--n", type=int, default=300)
p.add_argument("--batch-size", type=int, default=32)
args = p.parse_args()


class SensorLSTM(L.LightningModule):
    def __init__(self, n_feat=6, hid=32, ncls=4, batch_size=32, fixed_hidden=False):
        super().__init__()
        self.save_hyperparameters()
        self.lstm = nn.LSTM(n_feat, hid, batch_first=True)
        self.head = nn.Linear(hid, ncls)
        if fixed_hidden:
            # learned initial state, allocated once for the configured batch size
            self.h0 = nn.Parameter(torch.zeros(1, batch_size, hid))
            self.c0 = nn.Parameter(torch.zeros(1, batch_size, hid))
        else:
            self.h0 = self.c0 = None

    def forward(self, x):
        state = (self.h0, self.c0) if self.h0 is not None else None
        out, _ = self.lstm(x, state)
        return self.head(out[:, -1])

    def training_step(self, batch, _):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, prog_bar=True)
        self.log("train_acc", (logits.argmax(1) == y).float().mean(), prog_bar=True)
        return loss

    def validation_step(self, batch, _):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=3e-3)


def make(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 20, 6, generator=g)
    y = (x[:, :, 0].mean(1) > 0).long() + 2 * (x[:, :, 1].mean(1) > 0).long()
    return TensorDataset(x, y)


if __name__ == "__main__":
    L.seed_everything(42)
    torch.set_num_threads(1)
    train = DataLoader(make(args.n, 0), batch_size=args.batch_size, shuffle=True)
    val = DataLoader(make(96, 1), batch_size=args.batch_size)
    model = SensorLSTM(batch_size=args.batch_size, fixed_hidden=(args.fault == "fixed-hidden"))
    trainer = L.Trainer(accelerator="cpu", devices=args.devices,
                        strategy="ddp" if args.devices > 1 else "auto",
                        max_epochs=args.epochs, log_every_n_steps=5, default_root_dir="/tmp/rr66as_lit",
                        enable_checkpointing=True)
    trainer.fit(model, train, val)
    print(f"best checkpoint: {trainer.checkpoint_callback.best_model_path}")
