"""Lightning manual optimization (GAN-style two optimizers) with Trainer-level options."""
import argparse
from datetime import timedelta
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import lightning as L
from lightning.pytorch.strategies import DDPStrategy

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--devices", type=int, default=1)
args = p.parse_args()


class TwoOpt(L.LightningModule):
    def __init__(self):
        super().__init__()
        self.gen = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 8))
        self.disc = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
        self.automatic_optimization = False

    def training_step(self, batch, idx):
        (x,) = batch
        og, od = self.optimizers()
        z = torch.randn_like(x)
        fake = self.gen(z)
        d_loss = nn.functional.softplus(self.disc(fake.detach())).mean() + nn.functional.softplus(-self.disc(x)).mean()
        od.zero_grad(); self.manual_backward(d_loss); od.step()
        g_loss = nn.functional.softplus(-self.disc(fake)).mean()
        og.zero_grad(); self.manual_backward(g_loss); og.step()
        self.log_dict({"d_loss": d_loss, "g_loss": g_loss}, prog_bar=True)

    def configure_optimizers(self):
        return [torch.optim.Adam(self.gen.parameters(), 2e-3), torch.optim.Adam(self.disc.parameters(), 2e-3)]


if __name__ == "__main__":
    torch.manual_seed(0)
    dl = DataLoader(TensorDataset(torch.randn(512, 8) * 0.5 + 1.0), batch_size=32, shuffle=True)
    kw = {}
    if args.fault == "grad-clip":
        kw["gradient_clip_val"] = 1.0   # copied from the supervised config
    strat = DDPStrategy(process_group_backend="gloo", timeout=timedelta(seconds=20)) if args.devices > 1 else "auto"
    trainer = L.Trainer(accelerator="cpu", devices=args.devices, strategy=strat, max_epochs=3, logger=False,
                        enable_checkpointing=False, **kw)
    trainer.fit(TwoOpt(), dl)
    print("training finished")
