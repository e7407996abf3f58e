"""Lightning classifier with a focal-style loss written with torch.log(probs); Trainer(detect_anomaly=True)."""
import argparse, os
import torch, torch.nn as nn, torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-step", type=int, default=6)
p.add_argument("--devices", type=int, default=2)
p.add_argument("--anomaly", type=int, default=1)
args = p.parse_args()

class Focal(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 5))
    def training_step(self, batch, i):
        x, y = batch
        if self.global_rank == args.bad_rank and self.global_step == args.bad_step:
            x = x * 1e4     # un-normalised batch from a second data source
        p = torch.softmax(self.net(x), -1)
        pt = p.gather(1, y[:, None]).squeeze(1)
        loss = (-(1 - pt) ** 2 * torch.log(pt)).mean()    # focal loss, gamma=2
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

if __name__ == "__main__":
    torch.manual_seed(0)
    X = torch.randn(2048, 16); y = (X[:, :5]).argmax(1)
    dl = DataLoader(TensorDataset(X, y), batch_size=32, shuffle=True)
    tr = L.Trainer(accelerator="cpu", devices=args.devices, strategy="ddp", max_epochs=1, limit_train_batches=12,
                   detect_anomaly=bool(args.anomaly), log_every_n_steps=2, enable_checkpointing=False,
                   default_root_dir="lightning_runs")
    tr.fit(Focal(), dl)
    print("fit finished")
