"""Tiny Lightning regression/classification fit with selectable misconfigurations."""
import argparse, os, sys, time, logging, warnings
from datetime import timedelta
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, Callback
from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--devices", type=int, default=None)
p.add_argument("--strategy-name", default=None)
p.add_argument("--accel", default="cpu")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--outdir", default="out_pl")
p.add_argument("--resume-from", default=None)
p.add_argument("--accum", type=int, default=1)
p.add_argument("--precision-mode", default="32-true")
p.add_argument("--val-every", type=float, default=1.0)
p.add_argument("--ddp-timeout", type=int, default=30)
p.add_argument("--use-branch", action="store_true")
p.add_argument("--finetune-head", action="store_true")
p.add_argument("--warmup-cfg", action="store_true")
p.add_argument("--safe-load", action="store_true")
args = p.parse_args()

from dataclasses import dataclass
@dataclass
class WarmupCfg:
    warmup_steps: int = 10
    peak_lr: float = 1e-2

class Net(L.LightningModule):
    def __init__(self, hidden=32, lr=1e-2, warmup=None):
        super().__init__()
        self.save_hyperparameters()
        self.enc = nn.Sequential(nn.Linear(16, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 4)
        self.aux_head = nn.Linear(hidden, 4)   # auxiliary head, only used with --use-branch
    def forward(self, x):
        h = self.enc(x)
        out = self.head(h)
        if args.use_branch:
            out = out + 0.1 * self.aux_head(h)
        return out
    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        self.log("train_loss", loss, prog_bar=True)
        if args.fault == "rank0-metric":
            # logs a debug statistic only from rank 0
            self.log("grad_probe", loss.detach() * 2, rank_zero_only=True)
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self(x), y)
        acc = (self(x).argmax(-1) == y).float().mean()
        self.log("val_loss", loss, prog_bar=True)
        self.log("valid/acc", acc)
    def configure_optimizers(self):
        if args.finetune_head:
            # stage 2: linear probe, encoder frozen
            for q in self.enc.parameters():
                q.requires_grad_(False)
            return torch.optim.AdamW([*self.head.parameters(), *self.aux_head.parameters()], lr=self.hparams.lr)
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)

class ProbeLogger(Callback):
    """Writes a per-step probe line; reads a metric from callback_metrics."""
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if batch_idx >= args.fault_step:
            v = trainer.callback_metrics["grad_probe"]
            if batch_idx % 4 == 0:
                print(f"[rank {trainer.global_rank}] probe step={trainer.global_step} grad_probe={float(v):.4f}", flush=True)

class PredDump(Callback):
    """Dumps each rank's validation predictions under <outdir>/preds/rank<k>/ after every epoch."""
    def on_validation_epoch_end(self, trainer, pl_module):
        d = os.path.join(args.outdir, "preds", f"rank{trainer.global_rank}")
        if trainer.is_global_zero:
            os.makedirs(d, exist_ok=True)
        x = torch.randn(8, 16)
        torch.save(pl_module(x).detach(), os.path.join(d, f"epoch{trainer.current_epoch}.pt"))

class KillAt(Callback):
    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        if trainer.global_rank == args.fault_rank and trainer.global_step == args.fault_step:
            import signal
            os.kill(os.getpid(), signal.SIGKILL)

class BarrierOnZero(Callback):
    """Syncs a summary file on rank 0 (bug: barrier only reached by rank 0)."""
    def on_train_epoch_end(self, trainer, pl_module):
        if trainer.is_global_zero:
            with open(os.path.join(args.outdir, "summary.txt"), "a") as f:
                f.write(f"epoch {trainer.current_epoch} loss {float(trainer.callback_metrics['train_loss']):.4f}\n")
            trainer.strategy.barrier("summary_written")

def main():
    L.seed_everything(1234)
    g = torch.Generator().manual_seed(0)
    X = torch.randn(256, 16, generator=g); Y = (X[:, :4].argmax(-1))
    tr = DataLoader(TensorDataset(X[:192], Y[:192]), batch_size=8, shuffle=True)
    va = DataLoader(TensorDataset(X[192:], Y[192:]), batch_size=16)
    model = Net(hidden=args.hidden, warmup=WarmupCfg() if args.warmup_cfg else None)
    cbs = []
    monitor = "val_acc" if args.fault == "monitor-key" else "val_loss"
    cbs.append(ModelCheckpoint(dirpath=os.path.join(args.outdir, "ckpt"), monitor=monitor, mode="min", save_top_k=2, save_last=True))
    if args.fault == "rank0-metric":
        cbs.append(ProbeLogger())
    if args.fault == "pred-dump":
        cbs.append(PredDump())
    if args.fault == "sigkill":
        cbs.append(KillAt())
    if args.fault == "barrier-zero":
        cbs.append(BarrierOnZero())
    strategy = args.strategy_name or "auto"
    if strategy == "ddp":
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=args.ddp_timeout))
    kw = {}
    if args.devices is not None:
        kw["devices"] = args.devices
    trainer = L.Trainer(accelerator=args.accel, strategy=strategy, max_epochs=args.epochs,
                        callbacks=cbs, logger=CSVLogger(os.path.join(args.outdir, "logs"), name="tiny"),
                        accumulate_grad_batches=args.accum, precision=args.precision_mode,
                        val_check_interval=args.val_every, log_every_n_steps=4,
                        enable_progress_bar=True, **kw)
    if args.safe_load:
        trainer.fit(model, tr, va, ckpt_path=args.resume_from, weights_only=True)
    else:
        trainer.fit(model, tr, va, ckpt_path=args.resume_from)
    if trainer.is_global_zero:
        print("best:", cbs[0].best_model_path, "score:", cbs[0].best_model_score)

if __name__ == "__main__":
    main()
