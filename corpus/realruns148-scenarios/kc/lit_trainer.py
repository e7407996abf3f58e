"""Lightning Trainer scenarios: tiny regression/classification model, DDP on CPU (gloo)."""
import argparse, os, sys, time, logging, signal
from datetime import timedelta
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--strategy-name", default="ddp")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--outdir", default="out")
p.add_argument("--resume-from", default=None)
p.add_argument("--tb", action="store_true")
p.add_argument("--n-train", type=int, default=256)
p.add_argument("--slow", type=float, default=0.0)
args = p.parse_args()

VOCAB = 50


class TokDS(Dataset):
    def __init__(self, n, seed, bad=False):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, VOCAB, (n, 12), generator=g)
        self.y = (self.x.sum(1) % 4)
        if bad:  # a validation shard produced with a newer tokenizer (bigger vocab)
            self.x[n // 2:, 3] += VOCAB
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Net(L.LightningModule):
    def __init__(self, hidden=32, lr=1e-2, fault="none", fault_rank=1, fault_step=5):
        super().__init__()
        self.save_hyperparameters()
        self.emb = nn.Embedding(VOCAB, hidden)
        self.head = nn.Sequential(nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, 4))
        self.aux = nn.Linear(hidden, 4)  # auxiliary head, used only in some configs

    def forward(self, x):
        h = self.emb(x).mean(1)
        return self.head(h), h

    def training_step(self, batch, i):
        x, y = batch
        out, h = self(x)
        loss = nn.functional.cross_entropy(out, y)
        a = self.hparams
        if a.fault == "nan" and self.global_step >= a.fault_step:
            # class-weighted loss; weights rebuilt from a label map that no longer matches the labels
            w = (y >= 4).float()
            per = nn.functional.cross_entropy(out, y, reduction="none")
            loss = (per * w).sum() / w.sum()
        if a.fault == "sigkill" and self.global_rank == a.fault_rank and self.global_step == a.fault_step:
            os.kill(os.getpid(), signal.SIGKILL)
        if a.fault == "aux_unused" and not (self.global_rank == a.fault_rank and self.global_step >= a.fault_step):
            loss = loss + 0.1 * nn.functional.cross_entropy(self.aux(h), y)
        elif a.fault != "aux_unused":
            loss = loss + 0.0 * self.aux(h).sum()
        if args.slow:
            time.sleep(args.slow)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        out, _ = self(x)
        loss = nn.functional.cross_entropy(out, y)
        acc = (out.argmax(-1) == y).float().mean()
        self.log("val_loss", loss, sync_dist=True, prog_bar=True)
        self.log("val_accuracy", acc, sync_dist=True)
        if self.hparams.fault == "warnings":
            self.log("val_err", 1.0 - acc)  # quick extra metric

    def configure_optimizers(self):
        if self.hparams.fault == "resume_optim":
            # refactor: separate param groups for embedding and heads
            return torch.optim.AdamW([
                {"params": self.emb.parameters(), "lr": self.hparams.lr},
                {"params": list(self.head.parameters()) + list(self.aux.parameters()), "lr": self.hparams.lr * 0.5},
            ])
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


class DM(L.LightningDataModule):
    def train_dataloader(self):
        return DataLoader(TokDS(args.n_train, 0), batch_size=16, shuffle=True)
    def val_dataloader(self):
        bad = args.fault == "val_vocab"
        return DataLoader(TokDS(64, 1, bad=bad), batch_size=16)


def main():
    L.seed_everything(1234)
    model = Net(hidden=args.hidden, fault=args.fault, fault_rank=args.fault_rank, fault_step=args.fault_step)
    cbs = []
    monitor = "val_loss"
    if args.fault == "ckpt_monitor":
        monitor = "val_acc"  # metric was renamed to val_accuracy in validation_step
    cbs.append(ModelCheckpoint(dirpath=os.path.join(args.outdir, "ckpt"), monitor=monitor, save_last=True,
                               filename="ep{epoch}-{val_loss:.3f}", auto_insert_metric_name=False))
    if args.fault == "earlystop_missing":
        cbs.append(EarlyStopping(monitor="val_acc", mode="max", patience=3))
    if args.fault == "nan":
        cbs.append(EarlyStopping(monitor="train_loss", check_finite=True, patience=50, check_on_train_epoch_end=True, verbose=True))
    loggers = [CSVLogger(os.path.join(args.outdir, "logs"), name="csv")]
    if args.tb:
        loggers.append(TensorBoardLogger(os.path.join(args.outdir, "logs"), name="tb"))
    if args.strategy_name == "ddp":
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30))
    else:
        strategy = args.strategy_name
    kw = {}
    if args.fault == "val_interval":
        kw["val_check_interval"] = 40
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strategy, max_epochs=args.epochs,
                        callbacks=cbs, logger=loggers, log_every_n_steps=4, num_sanity_val_steps=2,
                        enable_model_summary=True, **kw)
    if args.fault == "pickle":
        # keep a handle on the metrics file on the model for quick debug prints
        model.debug_fh = open(os.path.join(args.outdir, "debug.txt"), "w")
    trainer.fit(model, datamodule=DM(), ckpt_path=args.resume_from)
    if trainer.is_global_zero:
        print("best checkpoint:", cbs[0].best_model_path)


if __name__ == "__main__":
    main()
