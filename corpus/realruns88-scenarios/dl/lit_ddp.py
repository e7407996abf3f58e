"""Tiny MLP regression/classification with Lightning Trainer(strategy='ddp', accelerator='cpu', devices=2).
--fault selects a real bug/misconfiguration, --rank/--step where it bites."""
import argparse, os, sys, time, json, signal
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=10)
p.add_argument("--root", default="/work/rr88/dl/runs/lit")
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--strategy", default="ddp")
a = p.parse_args()

class Shard(Dataset):
    def __init__(self, n=512, dim=32, seed=0):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, dim, generator=g); w = torch.randn(dim, 4, generator=g)
        self.y = (self.x @ w).argmax(1)
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], self.y[i]

def hidden_for_this_rank():
    # hidden size read from a per-node YAML-ish override (rank 1's node has a stale file)
    if a.fault == "model-mismatch" and int(os.environ.get("LOCAL_RANK", 0)) == a.rank:
        return a.hidden * 2
    return a.hidden

class Net(L.LightningModule):
    def __init__(self, hidden):
        super().__init__()
        self.save_hyperparameters()
        self.body = nn.Sequential(nn.Linear(32, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU())
        self.head = nn.Linear(hidden, 4)
        self.aux_head = nn.Linear(hidden, 1)   # auxiliary regression head, weight 0.1
    def forward(self, x): return self.body(x)
    def training_step(self, batch, i):
        x, y = batch
        h = self(x)
        loss = F.cross_entropy(self.head(h), y)
        if not (a.fault == "unused" and self.global_step >= a.step):
            loss = loss + 0.1 * self.aux_head(h).pow(2).mean()
        # (with --fault unused the aux loss is switched off after warm-up: aux_head then gets no grad)
        self.log("train_loss", loss, prog_bar=True)
        if a.fault == "kill" and self.global_rank == a.rank and self.global_step == a.step:
            open(f"/tmp/rr88dl_victim_{os.getpid()}", "w").close()
            time.sleep(30)
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        acc = (self.head(self(x)).argmax(1) == y).float().mean()
        self.log("val/acc" if a.fault == "monitor" else "val_acc", acc, sync_dist=True)
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

def main():
    L.seed_everything(7)
    model = Net(hidden_for_this_rank())
    tr = DataLoader(Shard(512, seed=0), batch_size=32, shuffle=True, num_workers=a.workers)
    va = DataLoader(Shard(128, seed=1), batch_size=32, num_workers=a.workers)
    cbs = [ModelCheckpoint(dirpath=os.path.join(a.root, "ckpt"), monitor="val_acc", mode="max", save_top_k=2, save_last=True)]
    kw = dict(strategy=a.strategy, accelerator="cpu", devices=2, max_epochs=a.epochs, default_root_dir=a.root,
              callbacks=cbs, log_every_n_steps=4)
    if a.fault == "val-interval":
        kw["val_check_interval"] = 50   # copied from the full-size config (1000s of batches per epoch)
    trainer = L.Trainer(**kw)
    trainer.fit(model, tr, va)
    if trainer.is_global_zero:
        print("best checkpoint:", cbs[0].best_model_path, "score:", cbs[0].best_model_score)

if __name__ == "__main__":
    main()
