"""Lightning family. --fault none | lognan (hand-rolled log-likelihood: log(prob) of a softmax that underflows
once the logits get large after a too-high lr from the config); --devices N uses strategy=ddp on CPU."""
import argparse, os, sys, math, warnings
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import EarlyStopping

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=6)
p.add_argument("--lr", type=float, default=1e-2)
args = p.parse_args()

class Clf(L.LightningModule):
    def __init__(s, lr):
        super().__init__(); s.save_hyperparameters()
        s.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 5))
    def loss_fn(s, logits, y):
        if args.fault == "lognan":
            probs = torch.exp(logits) / torch.exp(logits).sum(-1, keepdim=True)   # "numerically fine for our ranges"
            return -torch.log(probs.gather(1, y[:, None])).mean()
        return F.cross_entropy(logits, y)
    def training_step(s, b, i):
        x, y = b; loss = s.loss_fn(s.net(x), y)
        s.log("train_loss", loss, prog_bar=True, on_step=True, on_epoch=True, sync_dist=False)
        return loss
    def validation_step(s, b, i):
        x, y = b; loss = s.loss_fn(s.net(x), y)
        s.log("val_loss", loss, prog_bar=True, sync_dist=True)
    def configure_optimizers(s):
        return torch.optim.SGD(s.parameters(), lr=s.hparams.lr, momentum=0.9)

def make(n, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, 16, generator=g); W = torch.randn(16, 5, generator=torch.Generator().manual_seed(3))
    y = (x @ W + 0.8 * torch.randn(n, 5, generator=g)).argmax(-1)
    return TensorDataset(x, y)

if __name__ == "__main__":
    L.seed_everything(0)
    tr = DataLoader(make(2048, 0), batch_size=64, shuffle=True)
    va = DataLoader(make(256, 1), batch_size=64)
    cbs = [EarlyStopping(monitor="val_loss", patience=3, check_finite=True, verbose=True)]
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=args.devices,
                        strategy="ddp" if args.devices > 1 else "auto", callbacks=cbs,
                        log_every_n_steps=5, enable_checkpointing=False, logger=False)
    trainer.fit(Clf(args.lr), tr, va)
    print(f"finished: epochs run={trainer.current_epoch}, best val_loss={cbs[0].best_score.item():.4f}, stopped={trainer.should_stop}")
