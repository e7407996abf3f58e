"""Tiny Lightning training run with selectable faults.

python pl_train.py --strategy ddp --ndev 2 --fault none
"""
import argparse
import os
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset, TensorDataset

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback, ModelCheckpoint, EarlyStopping

p = argparse.ArgumentParser()
p.add_argument("--strategy", default="auto")
p.add_argument("--ndev", type=int, default=1)
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=3)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--nsamples", type=int, default=256)
p.add_argument("--bs", type=int, default=16)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--outdir", default="runs/pl")
p.add_argument("--resume", default=None)
p.add_argument("--precision", default="32-true")
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--sleep", type=float, default=0.0)
p.add_argument("--pg-timeout", type=int, default=60)
p.add_argument("--find-unused", action="store_true")
p.add_argument("--noisy", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--orig-params", type=int, default=1)
p.add_argument("--nsamples-rep", type=int, default=1)
args = p.parse_args()


class ToyData(Dataset):
    def __init__(self, n, fault, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, 32, generator=g)
        self.y = (self.x[:, :4].sum(1) > 0).long()
        self.fault = fault
        self.meta = {i: {"weight": 1.0} for i in range(n) if i % 97 != 41}

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.fault == "varlen":
            # sequences of different length; no collate_fn
            L = 8 + (i % 3)
            return torch.randn(L), self.y[i]
        if self.fault == "worker_keyerror":
            w = self.meta[i]["weight"]  # some indices have no metadata
            return self.x[i] * w, self.y[i]
        return self.x[i], self.y[i]


class DM(pl.LightningDataModule):
    def __init__(self, fault):
        super().__init__()
        self.fault = fault

    def setup(self, stage=None):
        self.train = ToyData(args.nsamples, self.fault, 0)
        self.val = ToyData(64, "none", 1)

    if args.fault != "no_train_loader":
        def train_dataloader(self):
            return DataLoader(self.train, batch_size=args.bs, shuffle=True, num_workers=args.workers)
    else:
        def training_dataloader(self):  # typo'd hook name
            return DataLoader(self.train, batch_size=args.bs, shuffle=True, num_workers=args.workers)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=args.bs, num_workers=args.workers)


class Net(pl.LightningModule):
    def __init__(self, hidden=64, fault="none"):
        super().__init__()
        self.save_hyperparameters()
        self.fault = fault
        self.body = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        n_classes = 2
        if fault == "classes_from_shard":
            # number of classes taken from the labels this process will see
            rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
            labels = [0, 0, 1, 1] * 20 + [1, 2]  # one "unknown" sample at the end of the label file
            n_classes = len(set(labels[rank::world]))
            print(f"[rank{rank}] label set has {n_classes} classes", flush=True)
        self.head = nn.Linear(hidden, n_classes)
        self.aux_head = nn.Linear(hidden, 2)
        if fault == "frozen_fsdp":
            for p_ in self.body[0].parameters():
                p_.requires_grad_(False)
        if fault == "spawn_lambda":
            self.loss_fn = lambda logits, y: F.cross_entropy(logits, y)
        else:
            self.loss_fn = F.cross_entropy

    def forward(self, x):
        return self.head(self.body(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        h = self.body(x)
        logits = self.head(h)
        loss = self.loss_fn(logits, y)
        if self.fault == "unused_branch":
            # auxiliary head used only when the rank's batch has a positive majority
            if self.global_rank != args.bad_rank or batch_idx < args.bad_step:
                loss = loss + 0.1 * F.cross_entropy(self.aux_head(h), y)
        else:
            loss = loss + 0.1 * F.cross_entropy(self.aux_head(h), y)
        self.log("train_loss", loss, prog_bar=True, sync_dist=False)
        if args.sleep:
            time.sleep(args.sleep)
        if self.fault == "step_float":
            return loss.item()
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        if self.fault == "val_vector":
            # logs per-sample losses instead of the mean
            self.log("val_loss", F.cross_entropy(logits, y, reduction="none"))
        else:
            self.log("val_loss", loss, prog_bar=True, sync_dist=not args.noisy)
        self.log("val_accuracy", acc, sync_dist=not args.noisy)
        if self.fault == "big_eval" and batch_idx == 0 and not self.trainer.sanity_checking:
            # nearest-neighbour retrieval metric over the whole training set
            train_x = self.trainer.datamodule.train.x.repeat(args.nsamples_rep, 1)
            emb = self.body(train_x)
            d = torch.cdist(emb, emb)
            self.log("nn_dist", d.min(1).values.mean())
        return {"val_loss": loss}

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=args.lr, momentum=0.9)


class GradNormLogger(Callback):
    """Logs gradient norms, and the per-class histogram of the current batch."""

    def __init__(self, fault):
        self.fault = fault
        self.class_names = {0: "neg", 1: "pos"}

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        x, y = batch
        counts = {}
        for lab in y.tolist():
            name = self.class_names[lab]
            counts[name] = counts.get(name, 0) + 1
        if self.fault == "callback_key" and trainer.global_rank == args.bad_rank and batch_idx >= args.bad_step:
            # label map re-read from the "new" schema where classes are strings
            self.class_names = {"0": "neg", "1": "pos"}
        if batch_idx % 4 == 0:
            pl_module.log("pos_frac", counts.get("pos", 0) / len(y))


class SlowRank(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if args.fault == "stuck_rank" and trainer.global_rank == args.bad_rank and batch_idx == args.bad_step:
            # wait for the shared eval-queue lock held by a previous job
            lock = os.path.join(args.outdir, "eval_queue.lock")
            os.makedirs(args.outdir, exist_ok=True)
            open(lock, "a").close()
            print(f"[rank{trainer.global_rank}] waiting for {lock} to be released", flush=True)
            while os.path.exists(lock):
                time.sleep(1)
        if args.fault == "sigkill" and trainer.global_rank == args.bad_rank and batch_idx == args.bad_step:
            print(f"[rank{trainer.global_rank}] allocating eval cache ...", flush=True)
            os.kill(os.getpid(), 9)


def main():
    pl.seed_everything(1234 + (1 if args.fault == "model_mismatch" else 0))
    hidden = args.hidden
    model = Net(hidden=hidden, fault=args.fault)
    dm = DM(args.fault)
    cbs = [GradNormLogger(args.fault), SlowRank()]
    if args.fault == "monitor_key":
        cbs.append(ModelCheckpoint(dirpath=args.outdir + "/ckpt", monitor="val_acc", mode="max", save_top_k=2))
    else:
        cbs.append(ModelCheckpoint(dirpath=args.outdir + "/ckpt", monitor="val_loss", mode="min", save_top_k=1))
    if args.fault == "lr_nan":
        cbs.append(EarlyStopping(monitor="train_loss", patience=100, check_finite=True, check_on_train_epoch_end=True))
    kw = {}
    if args.tqdm:
        from lightning.pytorch.callbacks import TQDMProgressBar
        cbs.append(TQDMProgressBar(refresh_rate=1))
    if args.fault == "anomaly":
        kw["detect_anomaly"] = True
    strategy = args.strategy
    from datetime import timedelta
    if strategy in ("ddp", "ddp_spawn"):
        from lightning.pytorch.strategies import DDPStrategy
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=args.pg_timeout),
                               start_method="spawn" if strategy == "ddp_spawn" else "popen",
                               find_unused_parameters=args.find_unused)
    elif strategy == "fsdp":
        from lightning.pytorch.strategies import FSDPStrategy
        strategy = FSDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=args.pg_timeout),
                                use_orig_params=bool(args.orig_params))
    if args.noisy:
        kw["log_every_n_steps"] = 50
        kw["num_sanity_val_steps"] = 2
    else:
        kw["log_every_n_steps"] = 5
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=args.ndev,
        strategy=strategy,
        max_epochs=args.epochs,
        precision=args.precision,
        callbacks=cbs,
        default_root_dir=args.outdir,
        enable_model_summary=True,
        **kw,
    )
    trainer.fit(model, datamodule=dm, ckpt_path=args.resume)
    if trainer.global_rank == 0:
        print("best checkpoint:", trainer.checkpoint_callback.best_model_path)


if __name__ == "__main__":
    main()
