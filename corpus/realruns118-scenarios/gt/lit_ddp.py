"""Tiny Lightning DDP (CPU/gloo) training: a char-level classifier on a locally built dataset.
Fault selected by --fault, rank by --fault-rank, step by --fault-step."""
import argparse, os, sys, time, signal
from datetime import timedelta
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint, EarlyStopping
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=5)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs-note", default="")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--workdir", default="runs/lit")
p.add_argument("--resume", default=None)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--lr", type=float, default=1e-2)
p.add_argument("--nworkers", type=int, default=0)
p.add_argument("--data-dir", default=None)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--spawn", action="store_true")
args = p.parse_args()

VOCAB = 50

class SeqDS(Dataset):
    def __init__(self, n=256, seed=0, bad_idx=None, ragged_idx=None):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randint(0, VOCAB, (n, 16), generator=g)
        self.y = (self.x.sum(1) % 4)
        self.bad_idx, self.ragged_idx = bad_idx, ragged_idx
    def __len__(self): return len(self.x)
    def __getitem__(self, i):
        x = self.x[i]
        if self.bad_idx is not None and i in self.bad_idx:
            # tokenizer from a newer vocab file produced an id outside the embedding table
            x = x.clone(); x[3] = VOCAB + 7
        if self.ragged_idx is not None and i in self.ragged_idx:
            x = torch.cat([x, x[:5]])   # sample longer than max_len, never truncated
        return x, self.y[i]

class NpyDS(Dataset):
    """one .npy file per sample, written by a preprocessing job"""
    def __init__(self, root):
        self.files = sorted(os.path.join(root, f) for f in os.listdir(root) if f.endswith(".npy"))
    def __len__(self): return len(self.files)
    def __getitem__(self, i):
        a = np.load(self.files[i])
        return torch.from_numpy(a[:16]).long(), int(a[16])

class Model(L.LightningModule):
    def __init__(self, hidden=32, lr=1e-2, fault="none", fault_rank=1, fault_step=5):
        super().__init__()
        self.save_hyperparameters()
        self.emb = nn.Embedding(VOCAB, hidden)
        self.rnn = nn.GRU(hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 4)
        if fault == "unused":
            self.aux_head = nn.Linear(hidden, 4)   # auxiliary head, only used when aux loss enabled
    def forward(self, x):
        h, _ = self.rnn(self.emb(x))
        return self.head(h[:, -1])
    def training_step(self, batch, idx):
        x, y = batch
        out = self(x)
        loss = F.cross_entropy(out, y)
        hp = self.hparams
        if hp.fault == "nan" and self.global_step >= hp.fault_step:
            loss = loss * torch.tensor(float("inf")) * 0   # 1/0 scaling bug in a custom weighting
        self.log("train_loss", loss, prog_bar=True)
        if hp.fault == "rank0log" and self.global_rank == 0 and self.global_step >= hp.fault_step:
            # only rank 0 computes the "expensive" metric, but asks Lightning to sync it
            self.log("train_acc_sync", (out.argmax(1) == y).float().mean(), sync_dist=True)
        return loss
    def validation_step(self, batch, idx):
        x, y = batch
        out = self(x)
        self.log("val/loss", F.cross_entropy(out, y))   # note: logged as val/loss
        self.log("val/acc", (out.argmax(1) == y).float().mean())
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

class KillCB(L.Callback):
    def on_train_batch_start(self, trainer, pl_module, batch, idx):
        if trainer.global_step == args.fault_step and trainer.global_rank == args.fault_rank:
            with open(os.path.join(args.workdir, f"pid_rank{trainer.global_rank}"), "w") as f:
                f.write(str(os.getpid()))
            time.sleep(30)   # external watchdog kills this process here

def main():
    L.seed_everything(42)
    os.makedirs(args.workdir, exist_ok=True)
    f = args.fault
    rank = int(os.environ.get("RANK", 0))
    if f == "npy":
        train = NpyDS(args.data_dir)
    else:
        bad = {201} if (f == "badtoken") else None
        ragged = {181} if f == "ragged" else None
        train = SeqDS(256, 0, bad_idx=bad, ragged_idx=ragged)
    val = SeqDS(64, 1)
    tl = DataLoader(train, batch_size=16, shuffle=False, num_workers=args.nworkers)
    vl = DataLoader(val, batch_size=16, num_workers=0)
    model = Model(args.hidden, args.lr, f, args.fault_rank, args.fault_step)
    cbs = []
    if f == "ckptmon":
        cbs.append(ModelCheckpoint(dirpath=os.path.join(args.workdir, "ckpt"), monitor="val_loss", mode="min", save_top_k=2))
    else:
        cbs.append(ModelCheckpoint(dirpath=os.path.join(args.workdir, "ckpt"), monitor="val/loss", mode="min", save_top_k=1, save_last=True))
    if f == "earlystop":
        cbs.append(EarlyStopping(monitor="val_acc", mode="max", patience=3))
    if f == "nan":
        cbs.append(EarlyStopping(monitor="train_loss", mode="min", patience=50, check_finite=True))
    if f == "kill":
        cbs.append(KillCB())
    strategy = "auto"
    if args.devices > 1:
        strategy = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=args.pg_timeout),
                               **({"start_method": "spawn"} if args.spawn else {}))
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strategy, max_epochs=args.epochs,
                        callbacks=cbs, log_every_n_steps=5, default_root_dir=args.workdir,
                        enable_progress_bar=(f != "noprog"))
    trainer.fit(model, tl, vl, ckpt_path=args.resume)
    if trainer.global_rank == 0:
        print(f"best checkpoint: {cbs[0].best_model_path}  score={cbs[0].best_model_score}")

if __name__ == "__main__":
    main()
