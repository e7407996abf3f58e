"""Lightning Trainer, ddp strategy on CPU. --fault selects a real bug/misconfig."""
import argparse, os, warnings
import torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--precision", default="32-true")
p.add_argument("--workers", type=int, default=0)
p.add_argument("--val-check", type=float, default=1.0)
a = p.parse_args()

class Net(L.LightningModule):
    def __init__(self, aux_head=False):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU())
        self.head = nn.Linear(64, 3)
        self.aux_head = nn.Linear(64, 3)  # auxiliary head, only used when aux loss enabled
        self.use_aux = aux_head
    def training_step(self, batch, i):
        x, y = batch
        h = self.body(x)
        loss = nn.functional.cross_entropy(self.head(h), y)
        if self.use_aux:
            loss = loss + 0.3 * nn.functional.cross_entropy(self.aux_head(h), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_loss", nn.functional.cross_entropy(self.head(self.body(x)), y), sync_dist=True)
    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-3)

if __name__ == "__main__":
    L.seed_everything(7)
    x = torch.randn(256, 20); y = torch.randint(0, 3, (256,))
    ds = TensorDataset(x, y)
    dl_kw = dict(batch_size=16, num_workers=a.workers)
    if a.fault == "persistent-workers":
        dl_kw["persistent_workers"] = True  # copied from the GPU config, but num_workers is 0 here
    train_dl = DataLoader(ds, shuffle=True, **dl_kw)
    val_dl = DataLoader(TensorDataset(x[:64], y[:64]), **{k: v for k, v in dl_kw.items()})
    model = Net(aux_head=(a.fault == "none"))
    trainer = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp" if a.devices > 1 else "auto",
                        max_epochs=a.epochs, precision=a.precision, log_every_n_steps=4,
                        enable_checkpointing=False, logger=False,
                        val_check_interval=int(a.val_check) if a.val_check > 1 else a.val_check)
    trainer.fit(model, train_dl, val_dl)
    if trainer.global_rank == 0:
        print("fit finished:", {k: round(float(v), 4) for k, v in trainer.callback_metrics.items()})
