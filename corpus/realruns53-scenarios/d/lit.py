import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
from lightning.pytorch.callbacks import ModelCheckpoint
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--hidden", type=int, default=32)
p.add_argument("--ckpt", default=None)
p.add_argument("--root", default="/tmp/rr53d_lit")
p.add_argument("--precision", default=None)
a = p.parse_args()

class Net(L.LightningModule):
    def __init__(self, hidden=32):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, hidden), nn.ReLU(), nn.Linear(hidden, 4))
    def training_step(self, batch, i):
        x, y = batch
        logits = self.net(x)
        loss = nn.functional.cross_entropy(logits, y)
        if a.fault == "log-vector":
            self.log("train/per_class_acc", (logits.argmax(-1)[:, None] == torch.arange(4)).float().mean(0))
        else:
            self.log("train_loss", loss, prog_bar=True)
        if a.fault == "bad-return":
            return {"train_loss": loss}
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val/loss", nn.functional.cross_entropy(self.net(x), y), sync_dist=(a.fault != "none"))
    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)

if a.fault == "no-optim":
    class Net2(Net):
        configure_optimizers = L.LightningModule.configure_optimizers
    Model = Net2
else:
    Model = Net

def loader(n, shuffle):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 16, generator=g); y = torch.randint(0, 4, (n,), generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=8, shuffle=shuffle)

if __name__ == "__main__":
    L.seed_everything(0)
    cbs = []
    if a.fault in ("monitor", "none", "state-dict"):
        cbs.append(ModelCheckpoint(dirpath=os.path.join(a.root, "ckpts"), monitor="val_loss" if a.fault == "monitor" else "val/loss", save_last=True))
    accel = "gpu" if a.fault == "gpu-on-cpu" else "cpu"
    tr = L.Trainer(accelerator=accel, devices=a.devices, strategy="ddp" if a.devices > 1 else "auto",
                   max_epochs=a.epochs, default_root_dir=a.root, callbacks=cbs, log_every_n_steps=5,
                   enable_checkpointing=bool(cbs), precision=a.precision)
    model = Model(hidden=a.hidden)
    tr.fit(model, loader(256, True), loader(64, False), ckpt_path=a.ckpt)
    print("final train_loss", float(tr.callback_metrics.get("train_loss", float("nan"))))
