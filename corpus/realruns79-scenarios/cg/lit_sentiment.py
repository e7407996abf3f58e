"""Lightning fine-tuning of a small GRU sentiment classifier with a hand-written adapter.

--fault:
  none           healthy run (Lightning's usual warnings)
  monitor        ModelCheckpoint monitors a key that validation never logs
  val-shape      validation_step forgets the pooling the training_step does
  log-vector     self.log() given the per-example loss vector
  shard-missing  (ddp) each rank loads its pre-tokenised shard; --rank's shard was never written
"""
import argparse
import datetime
import os
import sys

import lightning as L
import torch
import torch.nn as nn
import torch.nn.functional as F
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.strategies import DDPStrategy
from torch.utils.data import DataLoader, TensorDataset

sys.path.insert(0, os.path.dirname(__file__))
from common_tiny import build_tokenizer, make_corpus  # noqa: E402

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--prepare", type=int, default=0, help="only write N shards and exit")
p.add_argument("--root", default="/work/rr79/cg/tmp/lit")
args = p.parse_args()


def encode(texts, labels, tok):
    enc = tok(texts, padding="max_length", truncation=True, max_length=24, return_tensors="pt")
    return TensorDataset(enc["input_ids"], enc["attention_mask"], torch.tensor(labels))


class Adapter(nn.Module):
    def __init__(self, dim, r=4):
        super().__init__()
        self.down, self.up = nn.Linear(dim, r), nn.Linear(r, dim)

    def forward(self, h):
        return h + self.up(F.gelu(self.down(h)))


class LitSentiment(L.LightningModule):
    def __init__(self, vocab, dim=48):
        super().__init__()
        self.save_hyperparameters()
        self.emb = nn.Embedding(vocab, dim, padding_idx=2)
        self.rnn = nn.GRU(dim, dim, batch_first=True)
        self.adapter = Adapter(dim)
        self.head = nn.Linear(dim, 2)

    def forward(self, ids):
        h, _ = self.rnn(self.emb(ids))
        return self.head(self.adapter(h))          # per-token logits (B, T, 2)

    def training_step(self, batch, idx):
        ids, mask, y = batch
        logits = (self(ids) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        if args.fault == "log-vector":
            losses = F.cross_entropy(logits, y, reduction="none")
            self.log("train_loss", losses, prog_bar=True)
            return losses.mean()
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, idx):
        ids, mask, y = batch
        if args.fault == "val-shape":
            logits = self(ids)
        else:
            logits = (self(ids) * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)
        acc = (logits.argmax(-1) == y).float().mean()
        self.log("val_accuracy", acc, prog_bar=True)
        if logits.dim() == 2:
            self.log("val_loss", F.cross_entropy(logits, y))

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=3e-3)


class ShardData(L.LightningDataModule):
    def __init__(self, tok, root):
        super().__init__()
        self.tok, self.root = tok, root

    def setup(self, stage):
        path = os.path.join(self.root, f"shard-{self.trainer.global_rank:05d}.pt")
        d = torch.load(path)
        self.train = TensorDataset(d["input_ids"], d["attention_mask"], d["labels"])
        self.val = encode(*make_corpus(64, seed=99), self.tok)

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=16, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=16)


def prepare_shards(root, n):
    """what the preprocessing job does: one pre-tokenised shard per rank"""
    os.makedirs(root, exist_ok=True)
    tok = build_tokenizer()
    for r in range(n):
        t = encode(*make_corpus(160, seed=r), tok).tensors
        torch.save({"input_ids": t[0], "attention_mask": t[1], "labels": t[2]}, os.path.join(root, f"shard-{r:05d}.pt"))


def main():
    if args.prepare:
        prepare_shards(os.path.join(args.root, "shards"), args.prepare)
        return
    L.seed_everything(0)
    tok = build_tokenizer()
    model = LitSentiment(len(tok))
    monitor = "val_acc" if args.fault == "monitor" else "val_accuracy"
    ckpt = ModelCheckpoint(dirpath=os.path.join(args.root, f"ckpt-{args.fault}"), monitor=monitor, mode="max")
    kw = dict(accelerator="cpu", devices=args.devices, max_epochs=args.epochs, log_every_n_steps=4,
              callbacks=[ckpt], default_root_dir=args.root, val_check_interval=1.0)
    if args.devices > 1:
        kw["strategy"] = DDPStrategy(process_group_backend="gloo", timeout=datetime.timedelta(seconds=30))
    trainer = L.Trainer(**kw)
    if args.fault == "shard-missing":
        dm = ShardData(tok, os.path.join(args.root, "shards"))
        trainer.fit(model, datamodule=dm)
    else:
        train = encode(*make_corpus(320, seed=0), tok)
        val = encode(*make_corpus(64, seed=99), tok)
        trainer.fit(model, DataLoader(train, batch_size=16, shuffle=True), DataLoader(val, batch_size=16))
    if trainer.is_global_zero:
        print(f"best checkpoint: {ckpt.best_model_path} score={ckpt.best_model_score}")


if __name__ == "__main__":
    main()
