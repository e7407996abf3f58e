"""Lightning scenarios on CPU (ddp / single device).
python lightning_ddp.py --fault NAME [--rank R] [--step S] [--devices N] [--ckpt PATH]"""
import argparse, os, sys, warnings, signal
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping, ModelCheckpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=5)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--ckpt", default=None)
p.add_argument("--root", default="/work/rr57/n/runs/pl")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--strategy", default="ddp")
a = p.parse_args()


from dataclasses import dataclass


@dataclass
class SchedCfg:
    warmup: int = 2
    decay: float = 0.9


class Net(L.LightningModule):
    def __init__(self, lr=0.05, hidden=32, sched=None):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 3))
        if a.fault == "manual_accum":
            self.automatic_optimization = False

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        if a.fault == "rank_alloc" and self.global_rank == a.rank and self.global_step == a.step:
            # feature cache sized from the wrong dimension product (dataset size * hidden * hidden * ...)
            n = len(self.trainer.train_dataloader.dataset) * 16 * self.hparams.hidden ** 4 * 4096
            self._cache = torch.empty(n, dtype=torch.float32)
        if a.fault == "rank_sigkill" and self.global_rank == a.rank and self.global_step == a.step:
            os.kill(os.getpid(), signal.SIGKILL)
        if a.fault == "manual_accum":
            opt = self.optimizers()
            opt.zero_grad(); self.manual_backward(loss); opt.step()
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, i):
        x, y = batch
        logits = self.net(x)
        acc = (logits.argmax(-1) == y).float().mean()
        self.log("val_loss", nn.functional.cross_entropy(logits, y), sync_dist=True)
        self.log("val_accuracy", acc, sync_dist=True, prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.hparams.lr)


def data(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g)
    y = (x[:, :3].argmax(1))
    return TensorDataset(x, y)


def main():
    L.seed_everything(0)
    if a.fault == "noisy_ok":
        warnings.simplefilter("always")
    cbs = [ModelCheckpoint(dirpath=os.path.join(a.root, "ckpt"), save_last=True)]
    if a.fault == "es_missing":
        cbs.append(EarlyStopping(monitor="val_acc", mode="max", patience=3))
    if a.fault == "noisy_ok":
        cbs.append(EarlyStopping(monitor="val_loss", patience=1, min_delta=0.5))
    kw = dict(accelerator="cpu", devices=a.devices, max_epochs=a.epochs, default_root_dir=a.root,
              callbacks=cbs, log_every_n_steps=2, enable_progress_bar=True)
    if a.devices > 1:
        kw["strategy"] = a.strategy
    if a.fault == "manual_accum":
        kw["accumulate_grad_batches"] = 4
    if a.fault == "noisy_ok":
        kw["limit_val_batches"] = 0 if a.epochs == 0 else 1.0
    tr = L.Trainer(**kw)
    model = Net(sched=SchedCfg()) if a.fault.startswith("wo_") else Net()
    dl = DataLoader(data(256, 0), batch_size=16, shuffle=True)
    vdl = DataLoader(data(64, 1), batch_size=16)
    tr.fit(model, dl, vdl, ckpt_path=a.ckpt)
    if tr.global_rank == 0:
        print("fit finished, best:", tr.checkpoint_callback.best_model_path, flush=True)


if __name__ == "__main__":
    main()
