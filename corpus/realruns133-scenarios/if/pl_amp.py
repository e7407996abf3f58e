"""Lightning regression model with bf16-mixed / fp32 precision, DDP on CPU (gloo)."""
import argparse, os
import torch
import torch.nn as nn
import torch.nn.functional as F
import lightning as L
from torch.utils.data import DataLoader, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--prec", default="bf16-mixed")
p.add_argument("--devs", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--anomaly", action="store_true")
p.add_argument("--noisy", action="store_true", help="epoch-level logging without sync_dist, long log interval")
args = p.parse_args()


class Reg(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 2))

    def training_step(self, batch, i):
        x, y = batch
        out = self.net(x)
        mu, raw = out[:, 0], out[:, 1]
        if args.fault == "sqrt_var":
            var = raw.float() - raw.float().detach().min()  # "make it non-negative"
            std = torch.sqrt(var)
        else:
            std = F.softplus(raw.float()) + 1e-3
        # gaussian NLL (heteroscedastic regression)
        loss = (torch.log(std) + 0.5 * ((y - mu.float()) / std) ** 2).mean()
        self.log("train_loss", loss, prog_bar=True, sync_dist=False)
        if args.noisy:
            self.log("epoch_nll", loss, on_step=False, on_epoch=True)
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=1e-2)


def data(rank):
    g = torch.Generator().manual_seed(rank)
    x = torch.randn(512, 8, generator=g)
    y = x[:, 0] * 2 + 0.1 * torch.randn(512, generator=g)
    return DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=0)


if __name__ == "__main__":
    L.seed_everything(0)
    trainer = L.Trainer(accelerator="cpu", devices=args.devs, strategy="ddp" if args.devs > 1 else "auto",
                        precision=args.prec, max_epochs=args.epochs, detect_anomaly=args.anomaly,
                        default_root_dir="/work/rr133/if/tmp/pl", enable_checkpointing=False, logger=False,
                        log_every_n_steps=50 if args.noisy else 5)
    trainer.fit(Reg(), train_dataloaders=data(int(os.environ.get("RANK", 0))))
    print("done, global_step", trainer.global_step)
