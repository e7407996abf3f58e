"""Click-through-rate style binary classifier trained with Lightning (CPU).

--fault none       healthy; val metric 'precision_at_rare' is computed on a slice that is empty
--fault manual_bce hand-written BCE: -(y*log(sigmoid(z)) + (1-y)*log(1-sigmoid(z)))
--devices N --strategy ddp   Lightning launches the extra processes itself
"""
import argparse, math, os, warnings
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--lr", type=float, default=1e-3)
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--opt", default="adam")
p.add_argument("--warmup-steps", type=int, default=0)
p.add_argument("--devices", type=int, default=1)
p.add_argument("--strategy", default="auto")
p.add_argument("--bs", type=int, default=64)
p.add_argument("--n", type=int, default=4000)
args = p.parse_args()

NF = 40


def make(n, seed):
    g = np.random.RandomState(seed)
    x = g.randn(n, NF).astype(np.float32)
    x[:, :5] *= 30.0  # raw count features (not log-transformed)
    w = np.random.RandomState(3).randn(NF) * 0.3
    y = ((x / np.r_[np.full(5, 30.0), np.ones(NF - 5)]) @ w + 0.5 * g.randn(n) > 0.8).astype(np.float32)
    seg = (g.rand(n) < 0.02).astype(np.int64)  # "new-user" segment
    return TensorDataset(torch.tensor(x), torch.tensor(y), torch.tensor(seg))


class CTR(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(NF, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 1))

    def loss_fn(self, z, y):
        if args.fault == "manual_bce":
            p_ = torch.sigmoid(z)
            return -(y * torch.log(p_) + (1 - y) * torch.log(1 - p_)).mean()
        return F.binary_cross_entropy_with_logits(z, y)

    def training_step(self, batch, i):
        x, y, _ = batch
        z = self.net(x).squeeze(-1)
        loss = self.loss_fn(z, y)
        self.log("train_loss", loss, prog_bar=True)
        self.log("lr", self.trainer.optimizers[0].param_groups[0]["lr"], prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y, seg = batch
        z = self.net(x).squeeze(-1)
        pred = (z > 0).float()
        self.log("val_loss", F.binary_cross_entropy_with_logits(z, y), prog_bar=True, sync_dist=True)
        self.log("val_acc", (pred == y).float().mean(), prog_bar=True, sync_dist=True)
        sel = (seg == 1) & (pred == 1)
        prec_new = (y[sel].sum() / sel.sum()) if True else None  # 0/0 when no new-user positives predicted
        self.log("val_precision_new_users", prec_new, sync_dist=True)

    def on_validation_epoch_end(self):
        m = self.trainer.callback_metrics
        self.print(f"epoch {self.current_epoch}: " + " ".join(f"{k}={float(v):.4f}" for k, v in sorted(m.items())))

    def configure_optimizers(self):
        if args.opt == "sgd":
            opt = torch.optim.SGD(self.parameters(), lr=args.lr, momentum=0.9)
        else:
            opt = torch.optim.Adam(self.parameters(), lr=args.lr)
        if not args.warmup_steps:
            return opt
        # linear warmup (per step)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: (s + 1) / args.warmup_steps)
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


if __name__ == "__main__":
    L.seed_everything(7)
    tr, va = make(args.n, 1), make(300, 2)
    model = CTR()
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices, strategy=args.strategy,
                        log_every_n_steps=10, enable_checkpointing=False, logger=False,
                        num_sanity_val_steps=0,
                        callbacks=[L.pytorch.callbacks.TQDMProgressBar(refresh_rate=10)])
    trainer.fit(model, DataLoader(tr, batch_size=args.bs, shuffle=True), DataLoader(va, batch_size=100))
    print("final:", {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()})
