"""Lightning regression on a CSV-like table with missing cells (NaN) loaded without imputation.
--fault: none | missing (rows after --bad-row have empty 'target' cells)"""
import argparse, io, os, warnings
import numpy as np, torch, torch.nn as nn
import lightning as L
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--bad-row", type=int, default=600)
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()
rng = np.random.default_rng(0)
lines = ["f0,f1,f2,f3,target"]
for i in range(1024):
    f = rng.normal(size=4)
    t = "" if (a.fault == "missing" and i >= a.bad_row and i % 97 == 0) else f"{f.sum():.4f}"
    lines.append(",".join(f"{v:.4f}" for v in f) + "," + t)
arr = np.genfromtxt(io.StringIO("\n".join(lines)), delimiter=",", skip_header=1)  # empty -> nan
X = torch.tensor(arr[:, :4], dtype=torch.float32); y = torch.tensor(arr[:, 4], dtype=torch.float32)
print(f"loaded table: {arr.shape[0]} rows, {arr.shape[1]} columns")
ds = torch.utils.data.TensorDataset(X, y)
class M(L.LightningModule):
    def __init__(self):
        super().__init__(); self.net = nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 1))
    def training_step(self, b, i):
        x, t = b
        loss = nn.functional.mse_loss(self.net(x).squeeze(-1), t)
        self.log("train_loss", loss, prog_bar=True)
        return loss
    def configure_optimizers(self): return torch.optim.Adam(self.parameters(), 1e-2)
dl = torch.utils.data.DataLoader(ds, batch_size=32, shuffle=False)
tr = L.Trainer(max_epochs=a.epochs, accelerator="cpu", devices=1, logger=False, enable_checkpointing=False,
               log_every_n_steps=5)
tr.fit(M(), dl)
print("fit finished")
