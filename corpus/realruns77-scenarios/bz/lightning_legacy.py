"""LightningModule written for pytorch-lightning 1.x, run on lightning 2.x.
--fault picks which 1.x idiom is left in."""
import argparse, os, time
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--ckpt-path", default=None)
args = p.parse_args()

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import pytorch_lightning as pl

class LitClassifier(pl.LightningModule):
    def __init__(self, hparams=None, lr=0.05):
        super().__init__()
        if hparams is not None:
            self.save_hyperparameters(hparams)   # PL 1.x style: the whole argparse Namespace
        else:
            self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return {"loss": loss}

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        acc = (logits.argmax(1) == y).float().mean()
        self.log("val_loss", F.cross_entropy(logits, y))
        self.log("val_acc", acc, prog_bar=True)
        return acc

    if args.fault == "epoch_end_hooks":
        def training_epoch_end(self, outputs):
            avg = torch.stack([o["loss"] for o in outputs]).mean()
            self.log("train_loss_epoch", avg)

    if args.fault == "on_load_checkpoint_old":
        pass

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr)
        return [opt], [torch.optim.lr_scheduler.StepLR(opt, 1, 0.9)]

def loaders():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(640, 16, generator=g); y = (x[:, :4].sum(1) > 0).long()
    tr = DataLoader(TensorDataset(x[:512], y[:512]), batch_size=32, shuffle=True)
    va = DataLoader(TensorDataset(x[512:], y[512:]), batch_size=64)
    return tr, va

if __name__ == "__main__":
    pl.seed_everything(42)
    model = LitClassifier(hparams=args) if args.fault == "hparams_namespace" else LitClassifier()
    tr, va = loaders()
    kw = dict(max_epochs=args.epochs, default_root_dir="/work/rr77/bz/work/pl_logs", log_every_n_steps=4)
    if args.fault == "gpus_flag":
        kw.update(gpus=args.devices, progress_bar_refresh_rate=5)
    elif args.fault == "accelerator_ddp":
        kw.update(accelerator="ddp", devices=args.devices)
    elif args.fault == "resume_from_checkpoint":
        kw.update(accelerator="cpu", devices=args.devices, resume_from_checkpoint="/work/rr77/bz/work/pl_logs/last.ckpt")
    else:
        kw.update(accelerator="cpu", devices=args.devices, strategy="ddp" if args.devices > 1 else "auto")
    trainer = pl.Trainer(**kw)
    if args.fault == "fit_kwargs":
        trainer.fit(model, train_dataloader=tr, val_dataloaders=va)
    else:
        trainer.fit(model, tr, va, ckpt_path=args.ckpt_path)
    print("best val_acc", trainer.callback_metrics.get("val_acc"))
