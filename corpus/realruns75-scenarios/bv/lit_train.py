"""Lightning version of the toy classifier; Trainer flags come from the GPU cluster config."""
import argparse, os, torch, torch.nn as nn
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--accelerator", default="auto")
p.add_argument("--devices", default="auto")
p.add_argument("--strategy", default="auto")
p.add_argument("--precision", default="32-true")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--workers", type=int, default=0)
args = p.parse_args()


class LitNet(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))

    def training_step(self, batch, i):
        x, y = batch
        loss = nn.functional.cross_entropy(self.net(x), y)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=1e-3)


if __name__ == "__main__":
    g = torch.Generator().manual_seed(0)
    X = torch.randn(1024, 16, generator=g); Y = X[:, :4].argmax(1)
    dl = DataLoader(TensorDataset(X, Y), batch_size=32, shuffle=True, num_workers=args.workers, pin_memory=True)
    devices = args.devices if args.devices == "auto" else int(args.devices)
    trainer = L.Trainer(accelerator=args.accelerator, devices=devices, strategy=args.strategy,
                        precision=args.precision, max_epochs=args.epochs, log_every_n_steps=5,
                        enable_checkpointing=False, logger=False)
    trainer.fit(LitNet(), dl)
    print("fit finished, global_step", trainer.global_step)
