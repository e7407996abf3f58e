"""Lightning Trainer scenarios (CPU, DDP over gloo).

--fault selects a bug; --rank / --step select where it triggers.
"""
import argparse
import logging
import os
import sys
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

import lightning as L
from lightning.pytorch.callbacks import Callback, EarlyStopping, ModelCheckpoint
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--out", default="/work/rr68/ay/out/default")
p.add_argument("--resume", default=None)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--strategy", default="ddp")
p.add_argument("--pylog", action="store_true")
p.add_argument("--pbar", action="store_true")
p.add_argument("--ckpt", default=None)
p.add_argument("--bigcache", type=int, default=0)
args = p.parse_args()

if args.pylog:
    logging.basicConfig(level=logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train")


class RandDS(Dataset):
    def __init__(self, n=256, d=16, fault="none"):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, d, generator=g)
        self.y = (self.x.sum(1) > 0).long()
        self.fault = fault
        self.lengths = [16] * n
        self.records = [{"x": self.x[i], "y": int(self.y[i])} for i in range(n)]
        if fault == "worker_key":
            # records from the second shard were exported with a different schema
            for i in range(151, n, 2):
                self.records[i] = {"features": self.x[i], "label": int(self.y[i])}
        if fault == "collate":
            for i in range(100, n):
                self.records[i]["x"] = self.x[i][: 12 + (i % 4)]

    def __len__(self):
        return len(self.records)

    def __getitem__(self, i):
        r = self.records[i]
        return r["x"], r["y"]


class DM(L.LightningDataModule):
    def __init__(self, fault, workers):
        super().__init__()
        self.fault, self.workers = fault, workers

    def setup(self, stage=None):
        if os.environ.get("AY_PIDFILE") and self.trainer.global_rank == args.rank:
            with open(os.environ["AY_PIDFILE"], "w") as f:
                f.write(str(os.getpid()))
        self.train = RandDS(fault=self.fault)
        if args.bigcache and self.trainer.global_rank == 0:
            # pairwise-similarity cache for hard-negative mining, built on the main process
            n = args.bigcache
            feats = torch.randn(n, 16)
            self.sim_cache = feats @ feats.T
            print(f"sim cache {tuple(self.sim_cache.shape)}", flush=True)
        self.val = RandDS(n=64)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=16, shuffle=self.fault not in ("worker_key", "collate"),
                          num_workers=self.workers)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=16, num_workers=self.workers)


class Net(L.LightningModule):
    def __init__(self, hidden=32, lr=0.05, fault="none", frank=1, fstep=5):
        super().__init__()
        self.save_hyperparameters()
        self.l1 = nn.Linear(16, hidden)
        self.l2 = nn.Linear(hidden, 2)
        if fault == "unused":
            self.aux_head = nn.Linear(hidden, 4)  # auxiliary head, only used when aux loss enabled
        self.fault = fault
        self.frank, self.fstep = frank, fstep

    def forward(self, x):
        h = F.relu(self.l1(x))
        return self.l2(h)

    def training_step(self, batch, batch_idx):
        x, y = batch
        if self.fault in ("nan", "nan_anomaly") and self.global_step >= self.fstep:
            x = x * 1e38  # bad feature scaling from an un-normalised input column
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        if self.fault == "sync_dist_one_rank" and self.global_rank == self.frank:
            # debug metric only computed on this rank, but logged with sync_dist
            self.log("debug_grad_frac", (logits.argmax(1) == y).float().mean(), sync_dist=True)
        self.log("train_loss", loss, prog_bar=True)
        if self.fault == "no_loss_key":
            return {"train_loss": loss, "acc": (logits.argmax(1) == y).float().mean()}
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(1) == y).float().mean()
        self.log("val_loss", loss, prog_bar=True)
        self.log("val_acc", acc)

    def on_validation_epoch_end(self):
        if self.fault == "val_gather_rank0" and self.global_rank == 0:
            # gather predictions for a confusion matrix -- only on the main process
            allv = self.all_gather(torch.tensor([float(self.current_epoch)]))
            print(f"[rank0] gathered {allv.tolist()}", flush=True)

    def configure_optimizers(self):
        if self.fault == "no_optimizer":
            return None
        if self.fault == "plateau_no_monitor":
            opt = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
            sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=1)
            return {"optimizer": opt, "lr_scheduler": sched}
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)


class MetricsReport(Callback):
    """User callback: prints a summary line and a 'best so far' every few steps."""

    def __init__(self, fault, frank, fstep):
        self.fault, self.frank, self.fstep = fault, frank, fstep
        self.history = {}

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step % 4 == 0:
            m = trainer.callback_metrics
            msg = f"rank={trainer.global_rank} step={trainer.global_step} train_loss={float(m.get('train_loss', float('nan'))):.4f}"
            if args.pylog:
                log.info(msg)
            else:
                print(msg, flush=True)
        if self.fault == "callback_raise" and trainer.global_rank == self.frank and trainer.global_step >= self.fstep:
            best = self.history[trainer.current_epoch - 1]["val_acc"]
            print(f"best val_acc {best}", flush=True)

    def on_validation_epoch_end(self, trainer, pl_module):
        self.history[trainer.current_epoch] = {k: float(v) for k, v in trainer.callback_metrics.items()}


def main():
    L.seed_everything(42)
    dm = DM(args.fault, args.workers)
    if args.fault == "resume_hparams" and args.resume:
        model = Net(hidden=args.hidden, fault=args.fault)
    else:
        model = Net(hidden=args.hidden, fault=args.fault, frank=args.rank, fstep=args.step)
    if args.fault == "pickle_lambda":
        model.score_fn = lambda logits: logits.softmax(-1)
    callbacks = [MetricsReport(args.fault, args.rank, args.step)]
    monitor = "val_acc" if args.fault != "es_missing" else "val_f1"
    ckpt_dir = args.ckpt or os.path.join(args.out, "ckpt")
    callbacks.append(ModelCheckpoint(dirpath=ckpt_dir, monitor="val_loss", save_top_k=2, save_last=True))
    callbacks.append(EarlyStopping(monitor=monitor if args.fault != "nan" else "train_loss",
                                   mode="max" if args.fault != "nan" else "min",
                                   patience=5, check_finite=True))
    if args.strategy == "ddp":
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30))
    elif args.strategy == "ddp_spawn":
        strategy = DDPStrategy(start_method="spawn", process_group_backend="gloo", timeout=timedelta(seconds=30))
    else:
        strategy = args.strategy
    trainer = L.Trainer(
        accelerator="cpu",
        devices=args.devices,
        strategy=strategy,
        max_epochs=args.epochs,
        callbacks=callbacks,
        logger=CSVLogger(args.out, name="csv"),
        log_every_n_steps=2,
        enable_progress_bar=args.pbar,
        enable_model_summary=True,
        detect_anomaly=args.fault == "nan_anomaly",
    )
    trainer.fit(model, datamodule=dm, ckpt_path=args.resume)
    if trainer.global_rank == 0:
        print(f"done. best={callbacks[1].best_model_path} score={callbacks[1].best_model_score}", flush=True)


if __name__ == "__main__":
    main()
