"""Lightning classifier on synthetic images with a multi-worker DataLoader (CPU, ddp/gloo or single)."""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--img", type=int, default=32)
p.add_argument("--batch", type=int, default=16)
p.add_argument("--workers", type=int, default=1)
p.add_argument("--devices", type=int, default=1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--n", type=int, default=256)
p.add_argument("--ckpt-dir", default="tmp/lit_ckpt")
p.add_argument("--val-full-rank", type=int, default=-1, help="this rank keeps all val predictions as float64 full-resolution maps")
args = p.parse_args()

class DS(Dataset):
    def __len__(self): return args.n
    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        return torch.rand(3, args.img, args.img, generator=g), i % 10

class Net(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten(), nn.Linear(128, 10))
        self.preds = []
    def training_step(self, b, i):
        x, y = b
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, b, i):
        x, y = b
        out = self.net(x)
        if self.global_rank == args.val_full_rank:
            self.preds.append(nn.functional.interpolate(x, scale_factor=8).double())
        self.log("val_loss", nn.functional.cross_entropy(out, y), sync_dist=True)
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

if __name__ == "__main__":
    L.seed_everything(0)
    dl = DataLoader(DS(), batch_size=args.batch, num_workers=args.workers, shuffle=True)
    vdl = DataLoader(DS(), batch_size=args.batch, num_workers=args.workers)
    tr = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp" if args.devices > 1 else "auto",
                   max_epochs=args.epochs, default_root_dir=args.ckpt_dir, log_every_n_steps=4, enable_model_summary=True)
    tr.fit(Net(), dl, vdl)
    print("fit finished, best ckpt:", tr.checkpoint_callback.best_model_path)
