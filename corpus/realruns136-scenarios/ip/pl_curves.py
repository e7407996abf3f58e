"""Lightning regression model on a CSV-like table parsed per rank; ddp on CPU (gloo).
--fault:
  none        healthy (noisy) run, Lightning warnings about workers / sync_dist
  inf-cell    the rank --bad-rank shard contains a cell written as 'inf' (float('inf') parses it)
  slow-rank   rank --bad-rank's transform re-parses the raw text file per sample after --bad-step
"""
import argparse, math, os, sys, time

import torch
import torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import Callback

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=20)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--lr", type=float, default=3e-3)
p.add_argument("--workdir", default="tmp/pl")
p.add_argument("--bar", default="auto")
args = p.parse_args()

NF = 12


def make_table(rank, n=640):
    g = torch.Generator().manual_seed(100 + rank)
    X = torch.randn(n, NF, generator=g)
    w = torch.linspace(-1, 1, NF)
    y = X @ w + 0.3 * torch.randn(n, generator=g) + 0.5 * torch.sin(3 * X[:, 0])
    lines = [",".join(f"{v:.5f}" for v in row.tolist() + [t]) for row, t in zip(X, y.tolist())]
    if args.fault == "inf-cell" and rank == args.bad_rank:
        i = args.bad_step * 16 + 5
        cells = lines[i].split(",")
        cells[4] = "inf"  # sensor overflow written by the exporter
        lines[i] = ",".join(cells)
    return lines


class TableDS(torch.utils.data.Dataset):
    def __init__(self, rank):
        self.rank = rank
        self.raw = "\n".join(make_table(rank))
        self.rows = [[float(c) for c in ln.split(",")] for ln in self.raw.split("\n")]

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        if args.fault == "slow-rank" and self.rank == args.bad_rank and i >= args.bad_step * 16:
            rows = [[float(c) for c in ln.split(",")] for ln in self.raw.split("\n")]  # no cache
            for _ in range(3):
                rows = [[float(c) for c in ln.split(",")] for ln in self.raw.split("\n")]
            r = rows[i]
        else:
            r = self.rows[i]
        return torch.tensor(r[:-1]), torch.tensor(r[-1])


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(NF, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x).squeeze(-1), y)
        self.log("train_loss", loss, prog_bar=True)
        self.log("local_loss", loss, prog_bar=False)
        self.log("epoch_loss", loss, on_step=False, on_epoch=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=args.lr)


class RankMeter(Callback):
    def on_train_batch_start(self, trainer, pl_module, batch, batch_idx):
        self.t0 = time.time()

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_step % 5 == 0:
            dt = time.time() - self.t0
            print(f"[rank {trainer.global_rank}] global_step={trainer.global_step} loss={outputs['loss'].item():.4f} "
                  f"samples/s={16 / dt:.1f}", flush=True)


if __name__ == "__main__":
    torch.set_num_threads(1)
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp" if args.devices > 1 else "auto",
                        max_epochs=args.epochs, default_root_dir=args.workdir, enable_checkpointing=False,
                        log_every_n_steps=5, callbacks=[RankMeter()] + ([L.pytorch.callbacks.TQDMProgressBar(refresh_rate=5)] if args.bar == 'tqdm' else []), logger=False, use_distributed_sampler=False)
    model = Reg()
    ds = TableDS(trainer.global_rank if args.devices > 1 else 0)
    dl = torch.utils.data.DataLoader(ds, batch_size=16, shuffle=False)
    trainer.fit(model, dl)
