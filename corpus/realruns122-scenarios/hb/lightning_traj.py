"""Lightning trajectory-regression model (predict the next 2-D positions of up to 8 agents).

Data is written to a local CSV first (one row per agent per scene); scenes with fewer than 8 agents
are padded with zero rows and a mask.  Flags:
  --missing-rate F     fraction of CSV cells left empty by the exporter (read back as NaN)
  --dist-loss          average Euclidean displacement error (sqrt of the masked squared error)
  --anomaly            Trainer(detect_anomaly=True)
  --early-stop         EarlyStopping on val_loss (check_finite=True, the default)
  --devices N          CPU processes (strategy ddp)
"""
import argparse
import csv
import os
import random

import numpy as np
import torch
import torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, TQDMProgressBar
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--missing-rate", type=float, default=0.0)
p.add_argument("--dist-loss", action="store_true")
p.add_argument("--anomaly", action="store_true")
p.add_argument("--early-stop", action="store_true")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--max-epochs", type=int, default=4)
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--csv", default="/work/rr122/hb/tmpdata/scenes.csv")
p.add_argument("--scenes", type=int, default=3000)
p.add_argument("--version", type=int, default=0)
p.add_argument("--bs", type=int, default=16)
args = p.parse_args()
torch.set_num_threads(1)

A, H = 8, 4  # agents, history length


def write_csv(path):
    rng = random.Random(7)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["scene", "agent"] + ["x%d" % t for t in range(H + 1)] + ["y%d" % t for t in range(H + 1)])
        for s in range(args.scenes):
            for a in range(rng.randint(3, A)):
                x0, y0 = rng.uniform(-5, 5), rng.uniform(-5, 5)
                vx, vy = rng.uniform(-1, 1), rng.uniform(-1, 1)
                xs = [x0 + vx * t + rng.gauss(0, 0.05) for t in range(H + 1)]
                ys = [y0 + vy * t + rng.gauss(0, 0.05) for t in range(H + 1)]
                cells = ["%.4f" % v for v in xs + ys]
                cells = ["" if rng.random() < args.missing_rate else c for c in cells]
                w.writerow([s, a] + cells)
    os.replace(path + ".tmp", path)


def load(path):
    feats = np.zeros((args.scenes, A, 2 * H), dtype=np.float32)
    tgt = np.zeros((args.scenes, A, 2), dtype=np.float32)
    mask = np.zeros((args.scenes, A), dtype=np.float32)
    with open(path) as f:
        r = csv.DictReader(f)
        for row in r:
            s, a = int(row["scene"]), int(row["agent"])
            val = lambda k: float(row[k]) if row[k] != "" else float("nan")
            feats[s, a] = [val("x%d" % t) for t in range(H)] + [val("y%d" % t) for t in range(H)]
            tgt[s, a] = [val("x%d" % H), val("y%d" % H)]
            mask[s, a] = 1.0
    return torch.from_numpy(feats), torch.from_numpy(tgt), torch.from_numpy(mask)


class TrajModel(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(2 * H, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 2))

    def _loss(self, batch):
        x, y, m = batch
        pred = self.net(x) * m[..., None]
        y = y * m[..., None]
        if args.dist_loss:
            d = torch.sqrt(((pred - y) ** 2).sum(-1))  # displacement error per agent
            return (d * m).sum() / m.sum()
        return (((pred - y) ** 2).sum(-1) * m).sum() / m.sum()

    def training_step(self, batch, i):
        loss = self._loss(batch)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        self.log("val_loss", self._loss(batch), prog_bar=True, sync_dist=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=args.lr)


if __name__ == "__main__":
    L.seed_everything(1)
    if os.environ.get("LOCAL_RANK", "0") == "0" and not os.path.exists(args.csv):
        write_csv(args.csv)
    while not os.path.exists(args.csv):
        import time
        time.sleep(0.2)
    x, y, m = load(args.csv)
    n_val = args.scenes // 6
    train = TensorDataset(x[n_val:], y[n_val:], m[n_val:])
    val = TensorDataset(x[:n_val], y[:n_val], m[:n_val])
    cbs = [TQDMProgressBar(refresh_rate=4)] + ([EarlyStopping("val_loss", patience=3, verbose=True)] if args.early_stop else [])
    from lightning.pytorch.loggers import CSVLogger
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp" if args.devices > 1 else "auto",
                        max_epochs=args.max_epochs, detect_anomaly=args.anomaly, callbacks=cbs,
                        logger=CSVLogger("/work/rr122/hb/tmplogs/lightning", name="traj", version=args.version),
                        enable_checkpointing=False, log_every_n_steps=10)
    trainer.fit(TrajModel(), DataLoader(train, batch_size=args.bs, shuffle=True), DataLoader(val, batch_size=64))
