"""Lightning regression model on CPU DDP.

--fault none | zerovar (rank --bad-rank gets a constant batch -> sqrt(0) in a hand-written norm) | bf16flat
"""
import argparse
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-batch", type=int, default=3)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--precision", default="32-true")
p.add_argument("--anomaly", action="store_true")
p.add_argument("--clip-val", type=float, default=None)
p.add_argument("--root", default="pl_runs")
args = p.parse_args()


class DS(torch.utils.data.Dataset):
    def __init__(self, n=64):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 12, generator=g)
        self.y = self.x @ torch.linspace(-1, 1, 12) + 0.1 * torch.randn(n, generator=g)

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(12, 32)
        self.l2 = nn.Linear(32, 1)

    def forward(self, x):
        h = self.l1(x)
        mu = h.mean(0, keepdim=True)
        std = ((h - mu) ** 2).mean(0, keepdim=True).sqrt()  # batch-norm without eps inside sqrt
        h = torch.tanh((h - mu) / (std + 1e-6))
        return self.l2(h).squeeze(-1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        if args.fault == "zerovar" and self.global_rank == args.bad_rank and batch_idx == args.bad_batch \
                and self.current_epoch == 0:
            x = x[:1].expand_as(x).contiguous()  # duplicated record filling the whole batch
        loss = F.mse_loss(self(x), y.to(self.dtype))
        self.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True, sync_dist=True)
        return loss

    def on_train_epoch_end(self):
        m = self.trainer.callback_metrics
        if self.global_rank == 0:
            print(f"epoch {self.current_epoch}: train_loss_epoch={float(m['train_loss_epoch']):.6f} "
                  f"w_l1[0,:3]={self.l1.weight[0, :3].float().tolist()}", flush=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=args.lr)


if __name__ == "__main__":
    L.seed_everything(0)
    dl = torch.utils.data.DataLoader(DS(), batch_size=8, shuffle=False)
    trainer = L.Trainer(
        accelerator="cpu",
        devices=args.devices,
        strategy="ddp" if args.devices > 1 else "auto",
        max_epochs=args.epochs,
        precision=args.precision,
        detect_anomaly=args.anomaly,
        gradient_clip_val=args.clip_val,
        default_root_dir=args.root,
        log_every_n_steps=2,
        enable_checkpointing=False,
    )
    trainer.fit(Reg(), dl)
