"""Lightning binary classifier on tabular features; manual BCE as log(sigmoid)."""
import argparse
import torch, torch.nn as nn
import lightning as L

p = argparse.ArgumentParser()
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--bad-index", type=int, default=-1)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--stable", action="store_true")
args = p.parse_args()

class Tab(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(640, 12, generator=g)
        self.y = (self.x[:, 0] + 0.5 * self.x[:, 1] > 0).float()
        if args.bad_index >= 0:
            self.x[args.bad_index] = self.x[args.bad_index] * 1e4  # row stored in raw units, not standardised
            self.y[args.bad_index] = 1.0
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], self.y[i]

class Clf(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(12, 32), nn.ReLU(), nn.Linear(32, 1))
    def training_step(self, batch, idx):
        x, y = batch
        z = self.net(x).squeeze(-1)
        if args.stable:
            loss = nn.functional.binary_cross_entropy_with_logits(z, y)
        else:
            p = torch.sigmoid(z)
            loss = -(y * torch.log(p) + (1 - y) * torch.log(1 - p)).mean()
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

if __name__ == "__main__":
    L.seed_everything(0)
    dl = torch.utils.data.DataLoader(Tab(), batch_size=32, shuffle=False)
    trainer = L.Trainer(max_epochs=args.epochs, accelerator="cpu", devices=1, detect_anomaly=args.detect_anomaly,
                        log_every_n_steps=5, enable_checkpointing=False, logger=False)
    trainer.fit(Clf(), dl)
