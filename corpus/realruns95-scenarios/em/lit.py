"""Lightning (lightning.pytorch) CPU/gloo training scenarios. --fault selects the induced problem."""
import argparse, os, sys, time, logging, signal
from datetime import timedelta
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader, TensorDataset
import lightning.pytorch as pl
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping, TQDMProgressBar, RichProgressBar

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--strategy", default="ddp")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--data", default="/work/rr95/em/work/data")
p.add_argument("--ckpt-dir", default="/work/rr95/em/work/ckpt")
p.add_argument("--resume", default=None)
p.add_argument("--logging", action="store_true")
p.add_argument("--bar", default="tqdm")
p.add_argument("--noisy", action="store_true")
p.add_argument("--val-every", type=float, default=1.0)
args = p.parse_args()

if args.logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
log = logging.getLogger("train")

IN_DIM, N_CLS = 16, 4


def make_data(root, n_shards=3, n=96):
    os.makedirs(root, exist_ok=True)
    g = np.random.default_rng(0)
    for s in range(n_shards):
        fn = os.path.join(root, f"shard-{s:03d}.npz")
        if not os.path.exists(fn):
            x = g.normal(size=(n, IN_DIM)).astype(np.float32)
            y = (x[:, :N_CLS].argmax(1)).astype(np.int64)
            np.savez(fn, x=x, y=y)


class ShardDataset(Dataset):
    """Each rank reads its own shard file (shard-<rank>.npz)."""
    def __init__(self, root, shard):
        fn = os.path.join(root, f"shard-{shard:03d}.npz")
        d = np.load(fn)
        self.x, self.y = torch.from_numpy(d["x"]), torch.from_numpy(d["y"])
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return self.x[i], self.y[i]


class SampleFileDataset(Dataset):
    """One .npy file per sample, read lazily in __getitem__ (worker processes)."""
    def __init__(self, root, keep_open=False):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".npy"))
        self.keep_open = keep_open
        self.handles = []
        if keep_open:
            for f in self.files:
                self.handles.append(open(f, "rb"))
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        self.calls = getattr(self, "calls", 0) + 1
        wi = torch.utils.data.get_worker_info()
        if (args.fault == "worker-segv" and int(os.environ.get("RANK", 0)) == args.rank
                and wi is not None and wi.id == 1 and self.calls == args.step * 4 + 3):
            import ctypes
            ctypes.string_at(0)  # native decoder bug: NULL deref
        arr = np.load(self.files[i])
        return torch.from_numpy(arr[:IN_DIM].astype(np.float32)), torch.tensor(int(arr[IN_DIM]))


def make_sample_files(root, n=160, corrupt=None):
    os.makedirs(root, exist_ok=True)
    g = np.random.default_rng(1)
    for i in range(n):
        fn = os.path.join(root, f"sample-{i:05d}.npy")
        if not os.path.exists(fn):
            x = g.normal(size=IN_DIM + 1).astype(np.float32)
            x[IN_DIM] = float(np.argmax(x[:N_CLS]))
            np.save(fn, x)
    if corrupt is not None:
        fn = os.path.join(root, f"sample-{corrupt:05d}.npy")
        with open(fn, "r+b") as f:
            f.truncate(40)


class Net(pl.LightningModule):
    def __init__(self, hidden=32, lr=1e-2, in_dim=IN_DIM):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(in_dim, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(), nn.Linear(hidden, N_CLS))
        self.class_names = {0: "cat", 1: "dog", 2: "bird", 3: "fish"}

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, i):
        x, y = batch
        out = self(x)
        if args.fault == "nan-anomaly" and self.global_step >= args.step:
            # log-prob of a prediction used as a "confidence" term; sqrt of negative slips in
            conf = torch.sqrt(out.softmax(-1).max(-1).values - 0.5)
            loss = F.cross_entropy(out, y) + 0.1 * conf.mean()
        elif args.fault == "loss-target":
            loss = F.cross_entropy(out, F.one_hot(y, N_CLS + 1).float())
        else:
            loss = F.cross_entropy(out, y)
        self.log("train_loss", loss, prog_bar=True)
        if args.fault == "log-nonscalar":
            self.log("train_acc", (out.argmax(-1) == y).float(), prog_bar=True)
        if args.fault == "kill" and self.global_rank == args.rank and self.global_step == args.step:
            with open(f"/work/rr95/em/work/pid-rank{self.global_rank}", "w") as f:
                f.write(str(os.getpid()))
            time.sleep(20)
        if args.fault == "slow-barrier" and self.global_rank == args.rank and self.global_step == args.step:
            time.sleep(120)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        out = self(x)
        if args.fault == "val-keyerror":
            # per-class report: label ids come straight from the shard
            names = [self.class_names[int(c)] for c in y]
        loss = F.cross_entropy(out, y)
        self.log("valid_loss", loss, prog_bar=True, sync_dist=True)
        self.log("valid_acc", (out.argmax(-1) == y).float().mean(), sync_dist=not args.noisy)

    def configure_optimizers(self):
        opt = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)
        if args.noisy:
            sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=self.hparams.lr, total_steps=args.epochs * 6)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}
        return opt


class DM(pl.LightningDataModule):
    def __init__(self):
        super().__init__()
    def setup(self, stage=None):
        rank = self.trainer.global_rank
        if args.fault in ("worker-segv", "corrupt-sample", "fd-limit"):
            root = args.data + "-samples"
            self.train = SampleFileDataset(root, keep_open=(args.fault == "fd-limit"))
            self.val = ShardDataset(args.data, 0)
            return
        self.train = ShardDataset(args.data, rank)
        vx, vy = self.train.x[:32].clone(), self.train.y[:32].clone()
        if args.fault == "val-keyerror" and rank == args.rank:
            # this shard was relabelled with an extra "other" class id 4
            vy[vy == 3] = 4
        if args.fault == "shape" :
            vx = torch.cat([vx, torch.zeros(len(vx), 4)], 1)
        self.val = TensorDataset(vx, vy)
    def train_dataloader(self):
        return DataLoader(self.train, batch_size=8, shuffle=True, num_workers=args.workers,
                          persistent_workers=args.workers > 0)
    def val_dataloader(self):
        return DataLoader(self.val, batch_size=8)


def main():
    pl.seed_everything(42)
    if args.fault in ("worker-segv", "corrupt-sample", "fd-limit"):
        make_sample_files(args.data + "-samples", n=160 if args.fault != "fd-limit" else 400,
                          corrupt=(77 if args.fault == "corrupt-sample" else None))
    if args.fault != "missing-shard":
        make_data(args.data)
    log.info("data root %s: %s", args.data, sorted(os.listdir(args.data)))
    hidden = args.hidden
    model = Net(hidden=hidden, lr=args.lr)
    cbs = []
    if args.fault == "monitor-missing":
        cbs.append(ModelCheckpoint(dirpath=args.ckpt_dir, monitor="val_loss", mode="min", save_top_k=2))
        cbs.append(EarlyStopping(monitor="val_loss", patience=3))
    else:
        cbs.append(ModelCheckpoint(dirpath=args.ckpt_dir, monitor="valid_loss", mode="min", save_top_k=1,
                                   filename="epoch{epoch}-vl{valid_loss:.3f}"))
    if args.bar == "tqdm":
        cbs.append(TQDMProgressBar(refresh_rate=1))
    elif args.bar == "rich":
        cbs.append(RichProgressBar())
    if args.strategy in ("ddp", "ddp_spawn"):
        strategy = DDPStrategy(start_method="spawn" if args.strategy == "ddp_spawn" else "popen",
                               process_group_backend="gloo", timeout=timedelta(seconds=30))
    else:
        strategy = args.strategy
    trainer = pl.Trainer(accelerator="cpu", devices=args.devices, strategy=strategy,
                         max_epochs=args.epochs, callbacks=cbs, log_every_n_steps=(50 if args.noisy else 2),
                         detect_anomaly=(args.fault == "nan-anomaly"),
                         enable_progress_bar=(args.bar != "none"),
                         num_sanity_val_steps=(0 if args.fault in ("val-keyerror",) else 2),
                         val_check_interval=(int(args.val_every) if args.val_every > 1 else args.val_every),
                         default_root_dir="/work/rr95/em/work/lightning_logs_root")
    trainer.fit(model, datamodule=DM(), ckpt_path=args.resume)
    if trainer.global_rank == 0:
        print(f"best checkpoint: {trainer.checkpoint_callback.best_model_path}")


if __name__ == "__main__":
    main()
