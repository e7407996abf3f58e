"""Tiny Lightning 2.x classifier trained with Trainer on CPU.

Fault flags select a real bug / misconfiguration on a given rank and step.
Usable under torchrun (strategy ddp picks up the env), Lightning's own
subprocess launcher (devices=N), ddp_spawn, or single process.
"""
import argparse
import os
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, LearningRateMonitor, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger

p = argparse.ArgumentParser()
p.add_argument("--strategy", default="ddp")
p.add_argument("--devices", type=int, default=int(os.environ.get("WORLD_SIZE", "1")))
p.add_argument("--max-epochs", type=int, default=3)
p.add_argument("--samples", type=int, default=512)
p.add_argument("--bs", type=int, default=32)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--precision", default="32-true")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--monitor", default="val_loss")
p.add_argument("--ckpt-monitor", default="val_loss")
p.add_argument("--patience", type=int, default=3)
p.add_argument("--out", default="/tmp/eu_runs/default")
p.add_argument("--lr", type=float, default=0.05)
p.add_argument("--logger", default="csv")
p.add_argument("--val-check-interval", type=float, default=1.0)
p.add_argument("--ckpt-path", default=None)
p.add_argument("--seed", type=int, default=7)
p.add_argument("--timeout", type=int, default=30)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--bar", default="auto")
p.add_argument("--sched-step", type=int, default=1)
args = p.parse_args()


# label-smoothing mixing matrix (built once at import time)
CLASS_MIX = torch.full((4, 4), 0.02) + 0.92 * torch.eye(4)


def grank():
    return int(os.environ.get("RANK", os.environ.get("GLOBAL_RANK", "0")))


class ShardDataset(Dataset):
    """Reads per-sample records from a tensor; a 'bad' record table simulates a data bug."""

    def __init__(self, x, y, vary_len=False):
        self.x, self.y, self.vary_len = x, y, vary_len

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        x = self.x[i]
        if self.vary_len and i % 7 == 3:
            # tokenised record with a different length slipped through preprocessing
            x = torch.cat([x, torch.zeros(3)])
        if args.fault == "worker_keyerror":
            meta = {"id": i, "label": int(self.y[i])}
            if i == 37:
                meta = {"id": i, "lable": int(self.y[i])}
            return x, meta["label"]
        return x, self.y[i]


class DM(L.LightningDataModule):
    def __init__(self):
        super().__init__()
        self.prepared = {}

    def setup(self, stage=None):
        g = torch.Generator().manual_seed(args.seed)
        n = args.samples
        x = torch.randn(n, 16, generator=g)
        w = torch.randn(16, 4, generator=g)
        y = (x @ w).argmax(1)
        if args.fault == "shard_missing":
            r = self.trainer.global_rank
            path = os.path.join(args.out, "shards", f"train-{r:05d}-of-{self.trainer.world_size:05d}.pt")
            blob = torch.load(path)
            x, y = blob["x"], blob["y"]
        if args.fault == "empty_filter":
            # keep only "long" samples; threshold in wrong units filters everything out
            keep = x.norm(dim=1) > 400.0
            x, y = x[keep], y[keep]
            print(f"[datamodule] kept {int(keep.sum())}/{n} samples after length filter", flush=True)
        split = int(0.8 * len(x))
        self.train = ShardDataset(x[:split], y[:split], vary_len=(args.fault == "collate_len"))
        self.val = ShardDataset(x[split:], y[split:])

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=args.bs, shuffle=True, num_workers=args.workers,
                          persistent_workers=args.workers > 0)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=args.bs, num_workers=args.workers,
                          persistent_workers=args.workers > 0)


class Net(L.LightningModule):
    def __init__(self, hidden=32, lr=0.05):
        super().__init__()
        self.save_hyperparameters()
        if args.fault == "model_width" and grank() == args.fault_rank:
            hidden = hidden + 16  # rank reads a stale config
        self.l1 = nn.Linear(16, hidden)
        self.l2 = nn.Linear(hidden, 4)
        if args.fault in ("unused", "unused_ok"):
            self.aux_head = nn.Linear(hidden, 4)
        self.lr = lr
        try:
            import torchmetrics
            self.acc = torchmetrics.classification.MulticlassAccuracy(num_classes=4)
        except Exception:
            self.acc = None

    def forward(self, x):
        h = F.relu(self.l1(x))
        return self.l2(h)

    def training_step(self, batch, batch_idx):
        x, y = batch
        rank = self.global_rank
        if args.fault == "shape_rank" and rank == args.fault_rank and self.global_step >= args.fault_step:
            # feature-engineering branch appended an extra column for this shard
            x = torch.cat([x, x[:, :1] ** 2], dim=1)
        if args.fault in ("nan", "nan_anomaly") and self.global_step >= args.fault_step:
            x = x.clone()
            x[0, 0] = float("nan") if rank == args.fault_rank else x[0, 0]
        if args.fault == "dtype_bf16":
            # class-weight table built in fp32 and used with the half-precision logits
            logits = self(x) @ CLASS_MIX
            loss = F.cross_entropy(logits, y)
            self.log("train_loss", loss, prog_bar=True)
            return loss
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        if args.fault == "log_desync" and rank == args.fault_rank and self.global_step == args.fault_step:
            # only this rank runs an extra synced metric (debug branch)
            self.log("debug_gnorm", loss.detach(), sync_dist=True, on_step=True, reduce_fx="max")
            torch.distributed.all_reduce(torch.zeros(7))
        if args.fault == "alloc_rank" and rank == args.fault_rank and self.global_step == args.fault_step:
            # confusion buffer sized by n_samples*n_samples instead of n_classes*n_classes
            n = 400000
            buf = torch.zeros(n, n // 8)
            del buf
        if args.fault == "loss_vec":
            loss = F.cross_entropy(logits, y, reduction="none")
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True)
        if args.fault == "sleep_rank" and rank == args.fault_rank and self.global_step == args.fault_step:
            time.sleep(3600)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        self.log("val_loss", loss, prog_bar=True, sync_dist=args.fault != "no_sync_dist")
        if self.acc is not None:
            self.acc(logits, y)
            self.log("val_acc", self.acc, prog_bar=True)

    def on_validation_epoch_end(self):
        if args.fault == "metric_rank0" and self.trainer.is_global_zero and self.acc is not None:
            # print only on rank 0 ... but compute() all-gathers
            print(f"[rank0] epoch {self.current_epoch} acc={self.acc.compute():.3f}", flush=True)

    def configure_optimizers(self):
        opt = torch.optim.SGD(self.parameters(), lr=self.lr, momentum=0.9)
        sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "epoch"}}


def main():
    L.seed_everything(args.seed)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"rank{grank()}.pid"), "w") as f:
        f.write(str(os.getpid()))
    if args.fault == "metrics_diskfull":
        # the log dir sits on a scratch volume that fills up
        d = os.path.join(args.out, "logs", "tiny", "version_0")
        os.makedirs(d, exist_ok=True)
        if not os.path.lexists(os.path.join(d, "metrics.csv")):
            os.symlink("/dev/full", os.path.join(d, "metrics.csv"))
    if args.logger == "csv":
        logger = CSVLogger(os.path.join(args.out, "logs"), name="tiny", version=0)
    elif args.logger == "tb":
        from lightning.pytorch.loggers import TensorBoardLogger
        logger = TensorBoardLogger(os.path.join(args.out, "tb"), name="tiny")
    elif args.logger == "wandb":
        from lightning.pytorch.loggers import WandbLogger
        logger = WandbLogger(project="tiny-cls", save_dir=args.out, offline=True)
    else:
        logger = False
    callbacks = [
        ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"),
                        monitor=None if args.ckpt_monitor == "none" else args.ckpt_monitor, save_top_k=2,
                        save_last=True, filename="ep{epoch}-{val_loss:.3f}"),
        EarlyStopping(monitor=args.monitor, patience=args.patience, mode="min", check_finite=True, verbose=True),
    ]
    if logger is not False:
        callbacks.append(LearningRateMonitor(logging_interval="epoch"))
    if args.bar == "tqdm":
        from lightning.pytorch.callbacks import TQDMProgressBar
        callbacks.append(TQDMProgressBar(refresh_rate=1))
    strategy = args.strategy
    if strategy in ("ddp", "ddp_spawn", "ddp_find_unused_parameters_true") and args.devices > 1:
        from datetime import timedelta
        from lightning.pytorch.strategies import DDPStrategy
        kw = {}
        if strategy == "ddp_find_unused_parameters_true":
            kw["find_unused_parameters"] = True
            start = "popen"
        else:
            start = "spawn" if strategy == "ddp_spawn" else "popen"
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=args.timeout),
                               start_method=start, **kw)
    trainer = L.Trainer(
        accelerator="cpu", devices=args.devices, strategy=strategy, max_epochs=args.max_epochs,
        precision=args.precision, logger=logger, callbacks=callbacks, log_every_n_steps=2,
        val_check_interval=args.val_check_interval, default_root_dir=args.out,
        detect_anomaly=(args.fault == "nan_anomaly"),
    )
    model = Net(hidden=args.hidden, lr=args.lr)
    trainer.fit(model, datamodule=DM(), ckpt_path=args.ckpt_path)
    if trainer.is_global_zero:
        print(f"best={trainer.checkpoint_callback.best_model_path} score={trainer.checkpoint_callback.best_model_score}")


if __name__ == "__main__":
    main()
