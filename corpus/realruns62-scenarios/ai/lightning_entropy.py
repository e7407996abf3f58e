"""Lightning classifier with an entropy bonus computed as -(p*log p); --fault outlier feeds an unnormalised
batch on --rank at --step so softmax saturates (p == 0 exactly)."""
import argparse, os, warnings
import torch, torch.nn as nn
import lightning as L
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none"); p.add_argument("--rank", type=int, default=1)
p.add_argument("--step", type=int, default=10); p.add_argument("--devices", type=int, default=2)
p.add_argument("--anomaly", action="store_true"); p.add_argument("--steps", type=int, default=30)
a = p.parse_args()
class DS(torch.utils.data.Dataset):
    def __init__(self): g = torch.Generator().manual_seed(3); self.x = torch.randn(4096, 16, generator=g); self.W = torch.randn(16, 8, generator=torch.Generator().manual_seed(7))
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], (self.x[i] @ self.W).argmax()
class M(L.LightningModule):
    def __init__(self): super().__init__(); self.net = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 8))
    def training_step(self, batch, i):
        x, y = batch
        if a.fault == "outlier" and self.global_rank == a.rank and self.global_step >= a.step:
            x = x * 1e3
        probs = torch.softmax(self.net(x), -1)
        ent = -(probs * torch.log(probs)).sum(-1).mean()
        loss = -torch.log(probs.gather(1, y[:, None])).mean() - 0.01 * ent
        self.log("train_loss", loss, prog_bar=True); self.log("entropy", ent, prog_bar=True)
        return loss
    def configure_optimizers(self): return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)
if __name__ == "__main__":
    L.seed_everything(0)
    tr = L.Trainer(accelerator="cpu", devices=a.devices, strategy="ddp" if a.devices > 1 else "auto", max_steps=a.steps,
                   detect_anomaly=a.anomaly, log_every_n_steps=5, enable_checkpointing=False, logger=False)
    tr.fit(M(), torch.utils.data.DataLoader(DS(), batch_size=32, shuffle=True))
    if tr.global_rank == 0: print("fit finished at global_step", tr.global_step)
