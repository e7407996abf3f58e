"""Lightning (lightning 2.x) binary classifier on tabular features, CPU.

--fault log_bce   hand-written BCE: -(y*log(p) + (1-y)*log(1-p)) with p = sigmoid(logit);
                  one rank's shard has un-scaled features from --bad-epoch on (p saturates to exactly 1.0)
--fault none      healthy run
"""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "log_bce"])
p.add_argument("--devices", type=int, default=1)
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-epoch", type=int, default=2)
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--early-stop", action="store_true")
p.add_argument("--lr", type=float, default=1e-2)
args = p.parse_args()


class Tabular(Dataset):
    def __init__(self, n=256, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 10, generator=g)
        w = torch.randn(10, generator=g)
        self.y = (self.x @ w + 0.3 * torch.randn(n, generator=g) > 0).float()
        self.raw_scale = torch.rand(10, generator=g) * 900 + 100      # sensor units before scaling
        self.epoch = 0
        self.unscaled = False

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i] * self.raw_scale if self.unscaled else self.x[i]
        return x, self.y[i]


class Net(L.LightningModule):
    def __init__(self, lr):
        super().__init__()
        self.save_hyperparameters()
        self.mlp = nn.Sequential(nn.Linear(10, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch, idx):
        x, y = batch
        logit = self.mlp(x).squeeze(-1)
        if args.fault == "log_bce":
            p = torch.sigmoid(logit)
            loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
        else:
            loss = nn.functional.binary_cross_entropy_with_logits(logit, y)
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True, sync_dist=False)
        return loss

    def on_train_epoch_start(self):
        ds = self.trainer.train_dataloader.dataset
        if args.fault == "log_bce" and self.global_rank == args.bad_rank and self.current_epoch >= args.bad_epoch:
            ds.unscaled = True            # this rank's shard comes from the un-normalised export

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


if __name__ == "__main__":
    L.seed_everything(42)
    ds = Tabular()
    dl = DataLoader(ds, batch_size=32, shuffle=True)
    callbacks = []
    if args.early_stop:
        callbacks.append(EarlyStopping(monitor="train_loss_epoch", mode="min", patience=10, check_finite=True,
                                       check_on_train_epoch_end=True, verbose=True))
    trainer = L.Trainer(accelerator="cpu", devices=args.devices,
                        strategy="ddp" if args.devices > 1 else "auto",
                        max_epochs=args.epochs, detect_anomaly=args.detect_anomaly,
                        callbacks=callbacks, logger=False, enable_checkpointing=False,
                        log_every_n_steps=2)
    trainer.fit(Net(args.lr), dl)
    if trainer.global_rank == 0:
        print("fit finished; callback metrics:", {k: round(v.item(), 4) for k, v in trainer.callback_metrics.items()})
