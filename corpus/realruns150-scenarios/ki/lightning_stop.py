"""Family: Lightning runs stopped or limited from outside."""
import argparse, os, time
import torch, torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, TensorDataset


class Net(L.LightningModule):
    def __init__(self, sleep):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 2))
        self.sleep = sleep

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True, on_epoch=True)
        time.sleep(self.sleep)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--max-epochs", type=int, default=2)
    p.add_argument("--step-sleep", type=float, default=0.02)
    p.add_argument("--devices", type=int, default=1)
    p.add_argument("--root", default="runs/lt")
    p.add_argument("--pidfile", default=None)
    a = p.parse_args()
    if a.pidfile:
        with open(a.pidfile, "w") as f:
            f.write(str(os.getpid()))
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2048, 32, generator=g)
    y = (x[:, :4].sum(1) > 0).long()
    dl = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True)
    tr = L.Trainer(max_epochs=a.max_epochs, accelerator="cpu", devices=a.devices,
                   strategy="ddp" if a.devices > 1 else "auto", default_root_dir=a.root,
                   log_every_n_steps=10)
    tr.fit(Net(a.step_sleep), dl)
    print("fit finished", flush=True)
