"""Lightning Trainer scenarios on CPU (ddp / ddp_spawn / fsdp). Flags pick the fault, rank, step."""
import argparse, os, sys, time, math
from datetime import timedelta
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping, Callback
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--strategy", default="ddp")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=3)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--root", default="/tmp/r74bs_run")
p.add_argument("--resume", default=None)
p.add_argument("--precision", default="32-true")
p.add_argument("--logger", default="csv")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--bar", action="store_true")
p.add_argument("--ckpt-monitor", default="val_loss")
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--optim", default="adam")
p.add_argument("--es", action="store_true")
p.add_argument("--nsamples", type=int, default=256)
p.add_argument("--max-steps", type=int, default=-1)
p.add_argument("--pylog", action="store_true")
args = p.parse_args()

def grank():
    return int(os.environ.get("RANK", os.environ.get("GLOBAL_RANK", 0)))

class RandDS(Dataset):
    def __init__(self, n, fault, frank):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 16, generator=g)
        self.y = (self.x[:, :4].sum(1) > 0).long()
        self.fault, self.frank = fault, frank
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        if self.fault == "collate" and i % 7 == 3:
            x = x[:12]  # short record from a preprocessed shard
        if self.fault == "worker_err" and i == 37:
            meta = {"id": i}
            return x, meta["label"]
        if self.fault == "nofile":
            # per-feature tensors (columnar feature store); reassembled in training_step
            return {f"f{j}": x[j:j + 1].clone() for j in range(16)}, self.y[i]
        return x, self.y[i]

class DM(L.LightningDataModule):
    def __init__(self, a):
        super().__init__(); self.a = a
    def setup(self, stage):
        r = self.trainer.global_rank
        n = self.a.nsamples
        if self.a.fault == "empty" and r == self.a.rank:
            n = 0
        self.train = RandDS(n, self.a.fault if r == self.a.rank or self.a.fault in ("collate", "nofile") else "none", self.a.rank)
        self.val = RandDS(64, "none", -1)
        if self.a.fault == "dtype":
            import numpy as np
            arr = np.random.RandomState(0).randn(n, 16)
            self.train = TensorDataset(torch.from_numpy(arr), torch.from_numpy((arr[:, 0] > 0).astype("int64")))
    def train_dataloader(self):
        return DataLoader(self.train, batch_size=16, shuffle=True, num_workers=self.a.workers,
                          persistent_workers=self.a.workers > 0)
    def val_dataloader(self):
        return DataLoader(self.val, batch_size=32, num_workers=0)

class Net(L.LightningModule):
    def __init__(self, a):
        super().__init__()
        self.a = a
        self.save_hyperparameters({"hidden": a.hidden, "optim": a.optim})
        h = a.hidden
        if a.fault == "model_mismatch" and grank() == a.rank:
            h = a.hidden + 8
        self.enc = nn.Sequential(nn.Linear(16, h), nn.ReLU())
        self.head = nn.Linear(h, 2)
        if a.fault == "unused":
            self.aux_head = nn.Linear(h, 2)  # auxiliary head (only used with --aux)
        if a.fault == "pickle":
            self.score_fn = lambda logits: logits.softmax(-1)
        if a.fault == "embed":
            self.emb = nn.Embedding(100, 16)
    def forward(self, x):
        return self.head(self.enc(x))
    def training_step(self, batch, batch_idx):
        x, y = batch
        if isinstance(x, dict):
            x = torch.cat([x[f"f{j}"] for j in range(16)], 1)
        f, me = self.a.fault, self.global_rank == self.a.rank
        step = self.global_step
        if f == "embed":
            ids = (x.abs() * 30).long().clamp(max=69)
            if me and step >= self.a.step:
                ids = ids + 70   # tokens from the new vocab extension
            x = self.emb(ids).mean(1)
        if f == "shape" and me and step >= self.a.step:
            x = torch.cat([x, torch.zeros(x.size(0), 1)], dim=1)
        logits = self(x)
        if f == "target" and step >= self.a.step:
            loss = F.mse_loss(logits, y)
        elif f == "nograd" :
            with torch.no_grad():
                loss = F.cross_entropy(logits, y)
        elif f == "anomaly" and me and step >= self.a.step:
            loss = F.cross_entropy(logits, y) + torch.log(logits.sum() * 0 - 1.0).mean() * 0 + torch.sqrt(logits - logits.max()).mean()
        else:
            loss = F.cross_entropy(logits, y)
        if f == "inplace" and step >= self.a.step:
            h = self.enc(x)
            h2 = torch.sigmoid(h)
            h2 += 1.0
            loss = loss + h2.mean() * 0.01
            h2.mul_(0.5)
        if f == "desync" and me and step == self.a.step:
            allx = self.all_gather(x[:5].contiguous())
        elif f == "desync" and step == self.a.step:
            allx = self.all_gather(x)
        if f == "oom" and me and step >= self.a.step:
            # pairwise distance matrix over whole training set for a "hard negative" bonus
            big = torch.randn(self.a.nsamples * 400, 16)
            d = torch.cdist(big, big)
            loss = loss + d.mean() * 0
        if f == "rank_logonly" and me:
            self.log("rank_loss", loss, sync_dist=True)
        self.log("train_loss", loss, prog_bar=True)
        if f == "segv" and me and step == self.a.step:
            import ctypes; ctypes.string_at(0)
        if f == "hang" and me and step == self.a.step:
            time.sleep(600)
        if f == "slow":
            time.sleep(0.05)
        return loss
    def validation_step(self, batch, batch_idx):
        x, y = batch
        if self.a.fault == "embed":
            x = self.emb((x.abs() * 30).long().clamp(max=69)).mean(1)
        logits = self(x)
        loss = F.cross_entropy(logits, y)
        acc = (logits.argmax(-1) == y).float().mean()
        self.log("val_loss", loss, prog_bar=True)
        self.log("val_acc", acc)
    def configure_optimizers(self):
        if self.a.fault == "cfgopt":
            opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
            return opt
        if self.a.optim == "sgd2":
            return torch.optim.SGD([{"params": self.enc.parameters(), "lr": 0.1},
                                    {"params": self.head.parameters(), "lr": 0.01}], lr=0.1, momentum=0.9)
        if self.a.optim == "plateau":
            opt = torch.optim.AdamW(self.parameters(), lr=2e-3)
            return {"optimizer": opt,
                    "lr_scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(opt, factor=0.5, patience=2)}
        if self.a.optim == "sgd":
            return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)
        opt = torch.optim.Adam(self.parameters(), lr=1e-3)
        sch = torch.optim.lr_scheduler.StepLR(opt, step_size=5)
        return {"optimizer": opt, "lr_scheduler": sch}

import logging
log = logging.getLogger("train")
class MetricsPrinter(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step % 4 == 0:
            log.info("rank=%d epoch=%d step=%d loss=%.4f", trainer.global_rank, trainer.current_epoch,
                     trainer.global_step, float(outputs["loss"]))
    def on_validation_epoch_end(self, trainer, pl_module):
        m = {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()}
        log.info("rank=%d validation epoch=%d metrics=%s", trainer.global_rank, trainer.current_epoch, m)

class PGInit(Callback):
    def setup(self, trainer, pl_module, stage):
        if args.fault == "pg_twice":
            import torch.distributed as dist
            dist.init_process_group("gloo", timeout=timedelta(seconds=30))

def main():
    torch.manual_seed(0)
    strat = args.strategy
    if strat == "ddp":
        strat = DDPStrategy(timeout=timedelta(seconds=40), process_group_backend="gloo")
    elif strat == "ddp_spawn":
        strat = DDPStrategy(start_method="spawn", timeout=timedelta(seconds=40), process_group_backend="gloo")
    cbs = [ModelCheckpoint(dirpath=os.path.join(args.root, "ckpt"), monitor=args.ckpt_monitor, save_last=True,
                           filename="{epoch}-{step}-{val_loss:.3f}")]
    if args.es:
        cbs.append(EarlyStopping(monitor="val_loss", patience=1, min_delta=0.05, verbose=True))
    cbs.append(PGInit())
    if args.pylog:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        cbs.append(MetricsPrinter())
    logger = CSVLogger(args.root, name="csv") if args.logger == "csv" else TensorBoardLogger(args.root, name="tb")
    tr = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strat, max_epochs=args.epochs,
                   max_steps=args.max_steps, precision=args.precision, logger=logger, callbacks=cbs,
                   default_root_dir=args.root, enable_progress_bar=args.bar, log_every_n_steps=4,
                   detect_anomaly=(args.fault == "anomaly"))
    tr.fit(Net(args), datamodule=DM(args), ckpt_path=args.resume)
    if tr.global_rank == 0:
        print(f"done: best={cbs[0].best_model_path} score={cbs[0].best_model_score}")

if __name__ == "__main__":
    main()
