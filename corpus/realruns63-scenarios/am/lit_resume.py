"""Lightning CPU trainer with ModelCheckpoint and fit(ckpt_path=...).
Flags: --strategy ddp|ddp_spawn, --devices N, --hidden, --ckpt-dir, --ckpt-path, --epochs."""
import argparse, os, warnings
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint

p = argparse.ArgumentParser()
p.add_argument("--strategy", default="ddp")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--hidden", type=int, default=64)
p.add_argument("--ckpt-dir", default="lit/ckpts")
p.add_argument("--ckpt-path", default=None)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--port", default="30830")
args = p.parse_args()
os.environ.setdefault("MASTER_PORT", args.port)


class Lit(L.LightningModule):
    def __init__(self, hidden):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 4))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05)


def main():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 16, generator=g)
    y = (x[:, 0] > 0).long() + 2 * (x[:, 1] > 0).long()
    dl = DataLoader(TensorDataset(x, y), batch_size=16)
    ckpt_cb = ModelCheckpoint(dirpath=args.ckpt_dir, save_last=True, every_n_train_steps=4)
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=args.strategy,
                        max_epochs=args.epochs, callbacks=[ckpt_cb], logger=False,
                        log_every_n_steps=2, enable_model_summary=True)
    trainer.fit(Lit(args.hidden), dl, ckpt_path=args.ckpt_path)
    if trainer.is_global_zero:
        print("best/last:", ckpt_cb.last_model_path)


if __name__ == "__main__":
    main()
