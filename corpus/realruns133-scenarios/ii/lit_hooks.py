"""Lightning multi-rank scenarios: --fault selects the bug, --frank the rank, --fstep the step."""
import argparse, os, sys, time, signal
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping, Callback
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--frank", type=int, default=1)
p.add_argument("--fstep", type=int, default=5)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--outdir", default="runs/default")
p.add_argument("--datadir", default="data")
p.add_argument("--resume", default=None)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--bar", action="store_true")
p.add_argument("--tqdm", action="store_true")
p.add_argument("--every", type=int, default=5)
p.add_argument("--val-interval", type=float, default=1.0)
args = p.parse_args()

def grank():
    return int(os.environ.get("RANK", os.environ.get("GLOBAL_RANK", "0")))

class ShardData(L.LightningDataModule):
    def __init__(self, datadir, bs=16):
        super().__init__(); self.datadir = datadir; self.bs = bs; self.num_classes = None
    def prepare_data(self):
        if args.fault == "missing_shard":
            return  # shards are pre-staged by the data sync job
        os.makedirs(self.datadir, exist_ok=True)
        for r in range(2):
            f = os.path.join(self.datadir, f"shard-{r:02d}.pt")
            if not os.path.exists(f):
                g = torch.Generator().manual_seed(r)
                x = torch.randn(256, 32, generator=g)
                y = (x[:, :4].argmax(1)).long()
                torch.save({"x": x, "y": y}, f)
    def setup(self, stage=None):
        r = self.trainer.global_rank
        shard = os.path.join(self.datadir, f"shard-{r:02d}.pt")
        d = torch.load(shard)
        x, y = d["x"], d["y"]
        if args.fault == "setup_classes" and r == args.frank:
            # this rank's shard happens to contain a label the others never see
            y = y.clone(); y[-1] = 4
        if args.fault == "setup_len" and r == args.frank:
            x = torch.cat([x, x[:96]]); y = torch.cat([y, y[:96]])
        # infer number of classes from the data seen by *this* rank
        self.num_classes = int(y.max()) + 1
        n = int(len(x) * 0.75)
        self.train_ds = TensorDataset(x[:n], y[:n]); self.val_ds = TensorDataset(x[n:], y[n:])
    def train_dataloader(self):
        return DataLoader(self.train_ds, batch_size=self.bs, shuffle=False)
    def val_dataloader(self):
        bs = self.bs
        if args.fault == "val_oom" and self.trainer.global_rank == args.frank:
            bs = len(self.val_ds)
        return DataLoader(self.val_ds, batch_size=bs)

class Net(L.LightningModule):
    def __init__(self, dm=None, num_classes=4, lr=1e-2):
        super().__init__()
        self.save_hyperparameters(ignore=["dm"])
        self.dm = dm; self.lr = lr
        self.body = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, num_classes)
        if args.fault == "unused_param":
            self.aux_head = nn.Linear(64, 2)   # auxiliary head kept from an old experiment
    def configure_model(self):
        if self.dm is not None and self.dm.num_classes is not None and self.head.out_features != self.dm.num_classes:
            self.head = nn.Linear(64, self.dm.num_classes)
    def forward(self, x):
        h = self.body(x)
        if args.fault == "val_oom" and not self.training and self.global_rank == args.frank:
            # expensive pairwise feature similarity used by the validation metric
            h = h.unsqueeze(1) * torch.ones(h.shape[0], 262144, 1)
            h = h.mean(1)
        return self.head(h)
    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        if args.fault == "rank0_sync_log" and self.trainer.is_global_zero:
            self.log("train_loss_synced", loss, sync_dist=True)
        self.log("train_loss", loss, prog_bar=True)
        if args.fault == "kill" and self.global_rank == args.frank and self.global_step == args.fstep:
            with open(os.path.join(args.outdir, f"rank{self.global_rank}.pid"), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(60)
        if args.fault == "slow_step" and self.global_rank == args.frank and self.global_step >= args.fstep:
            time.sleep(3)
        return loss
    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(1) == y).float().mean()
        if args.fault in ("monitor_missing", "es_missing"):
            self.log("valid_loss", loss, sync_dist=True)
        elif args.fault == "none_nosync":
            self.log("val_loss", loss)
        else:
            self.log("val_loss", loss, sync_dist=True)
        self.log("val_acc", acc, sync_dist=True, prog_bar=True)
    if args.fault == "removed_hook":
        def training_epoch_end(self, outputs):
            avg = torch.stack([o["loss"] for o in outputs]).mean()
            self.log("epoch_loss", avg)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)

class RankZeroStats(Callback):
    """Collect global example count at epoch end, only printed on rank 0."""
    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            n = torch.tensor(float(len(trainer.datamodule.train_ds)))
            total = trainer.strategy.reduce(n, reduce_op="sum")
            print(f"[stats] epoch {trainer.current_epoch}: examples seen across ranks = {int(total)}", flush=True)

class WrongSigCallback(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx, dataloader_idx):
        if batch_idx % 5 == 0 and trainer.is_global_zero:
            print(f"batch {batch_idx} loss {outputs['loss'].item():.4f}", flush=True)

class WandbLikeEveryN(Callback):
    def on_validation_end(self, trainer, pl_module):
        pass

def main():
    L.seed_everything(1234)
    os.makedirs(args.outdir, exist_ok=True)
    dm = ShardData(args.datadir)
    model = Net(dm=dm, lr=args.lr)
    if args.fault == "lr_nan":
        model.lr = args.lr
    cbs = []
    ck_dir = os.path.join(args.outdir, "checkpoints")
    if args.fault == "monitor_missing":
        cbs.append(ModelCheckpoint(dirpath=ck_dir, monitor="val_loss", mode="min", save_top_k=1))
    elif args.fault == "es_missing":
        cbs.append(ModelCheckpoint(dirpath=ck_dir, save_last=True))
        cbs.append(EarlyStopping(monitor="val_loss", patience=3))
    elif args.fault == "lr_nan":
        cbs.append(ModelCheckpoint(dirpath=ck_dir, monitor="val_loss", save_last=True))
        cbs.append(EarlyStopping(monitor="train_loss", patience=50, check_finite=True))
    else:
        cbs.append(ModelCheckpoint(dirpath=ck_dir, monitor="val_loss", mode="min", save_top_k=2, save_last=True))
    if args.tqdm:
        from lightning.pytorch.callbacks import TQDMProgressBar
        cbs.append(TQDMProgressBar(refresh_rate=2))
    if args.fault == "rank0_callback":
        cbs.append(RankZeroStats())
    if args.fault == "wrong_sig":
        cbs.append(WrongSigCallback())
    strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30))
    if args.fault == "unused_param":
        strategy = "ddp"
    if args.fault == "spawn":
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=30), start_method="spawn")
    if args.devices == 1:
        strategy = "auto"
    logger = CSVLogger(save_dir=os.path.join(args.outdir, "logs"), name="lit")
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strategy, max_epochs=args.epochs,
                        callbacks=cbs, logger=logger, log_every_n_steps=args.every,
                        val_check_interval=(int(args.val_interval) if args.val_interval > 1 else args.val_interval),
                        enable_progress_bar=args.bar, enable_model_summary=True,
                        default_root_dir=args.outdir)
    trainer.fit(model, datamodule=dm, ckpt_path=args.resume)
    if trainer.is_global_zero:
        print(f"training finished: best={trainer.checkpoint_callback.best_model_path if trainer.checkpoint_callback else None}", flush=True)

if __name__ == "__main__":
    main()
