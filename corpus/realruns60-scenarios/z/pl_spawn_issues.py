"""Lightning ddp_spawn pitfalls: unpicklable module attributes, missing __main__ guard, worker collate bugs."""
import argparse, os, sys
from datetime import timedelta
import torch, torch.nn as nn
from torch.utils.data import DataLoader, Dataset
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--out", default="/work/rr60/z/tmp/spawn")
args = p.parse_args()


class Seqs(Dataset):
    """variable-length token sequences, padded in collate"""
    def __init__(self, n=128):
        g = torch.Generator().manual_seed(0)
        self.items = [torch.randint(0, 50, (int(torch.randint(4, 12, (1,), generator=g)),), generator=g) for _ in range(n)]
    def __len__(self):
        return len(self.items)
    def __getitem__(self, i):
        x = self.items[i]
        return x, x[0] % 4


class Tagger(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 16)
        self.out = nn.Linear(16, 4)
        # score normaliser chosen at construction time
        self.norm_fn = (lambda t: t / t.shape[-1]) if args.fault == "lambda-attr" else None
    def training_step(self, batch, idx):
        x, y = batch
        h = self.emb(x).mean(1)
        logits = self.out(h)
        if self.norm_fn is not None:
            logits = self.norm_fn(logits)
        loss = nn.functional.cross_entropy(logits, y)
        self.log("loss", loss, prog_bar=True)
        return loss
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def pad_collate(batch):
    xs, ys = zip(*batch)
    if args.fault == "no-pad":
        return torch.stack(xs), torch.stack(ys)   # forgot to pad
    L_ = max(len(x) for x in xs)
    return torch.stack([nn.functional.pad(x, (0, L_ - len(x))) for x in xs]), torch.stack(ys)


def build_and_fit():
    dl = DataLoader(Seqs(), batch_size=8, shuffle=True, collate_fn=pad_collate, num_workers=args.workers)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices,
                        strategy=DDPStrategy(process_group_backend="gloo", start_method="spawn", timeout=timedelta(seconds=20)),
                        max_epochs=2, logger=False, callbacks=[ModelCheckpoint(dirpath=os.path.join(args.out, "ckpt"))],
                        enable_progress_bar=True)
    trainer.fit(Tagger(), dl)
    print("finished")


if args.fault == "no-main-guard":
    build_and_fit()
elif __name__ == "__main__":
    build_and_fit()
