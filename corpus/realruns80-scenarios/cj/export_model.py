"""Train a tiny regressor for a few steps, then torch.export it for serving.
--fault:
  none          static export, evaluated with the export batch size
  data-branch   forward skips normalisation when the input is already normalised (data-dependent if)
  batch-dim     export with a dynamic batch Dim, but forward reshapes with the configured batch size
  serve-tail    static export, then the eval loop feeds the last partial batch to the exported program
"""
import argparse, time, os, logging
import torch, torch.nn as nn, torch.nn.functional as F
from torch.export import export, Dim

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=20)
p.add_argument("--out", default="/work/rr80/cj/ckpt/regressor.pt2")
p.add_argument("--log", action="store_true")
a = p.parse_args()
if a.log:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [export] %(message)s")
    say = logging.getLogger("x").info
else:
    say = print
BATCH, NF, NPATCH = 8, 12, 4
torch.manual_seed(0)

class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(NF // NPATCH, 16), nn.ReLU())
        self.head = nn.Linear(16 * NPATCH, 1)
        self.register_buffer("mu", torch.zeros(NF)); self.register_buffer("sd", torch.ones(NF))
    def forward(self, x):
        if a.fault == "data-branch":
            if x.abs().mean() > 1.5:                  # raw (un-normalised) input
                x = (x - self.mu) / self.sd
        else:
            x = (x - self.mu) / self.sd
        if a.fault == "batch-dim":
            patches = x.view(BATCH, NPATCH, NF // NPATCH)   # cfg.batch_size
        else:
            patches = x.view(x.shape[0], NPATCH, NF // NPATCH)
        return self.head(self.enc(patches).flatten(1)).squeeze(-1)

X = torch.randn(203, NF) * 3 + 1
w = torch.randn(NF)
Y = X @ w * 0.1
model = Regressor()
model.mu.copy_(X.mean(0)); model.sd.copy_(X.std(0))
opt = torch.optim.Adam(model.parameters(), lr=1e-2)
for step in range(a.steps):
    i = torch.randint(0, len(X), (BATCH,))
    loss = F.mse_loss(model(X[i]), Y[i])
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 5 == 0 or step == a.steps - 1:
        say(f"step {step:3d} mse {loss.item():.4f}")
model.eval()
example = (X[:BATCH],)
say(f"exporting Regressor with example input {tuple(example[0].shape)}")
if a.fault == "batch-dim":
    ep = export(model, example, dynamic_shapes={"x": {0: Dim("batch", min=1, max=1024)}})
else:
    ep = export(model, example)
os.makedirs(os.path.dirname(a.out), exist_ok=True)
torch.export.save(ep, a.out)
say(f"saved exported program to {a.out}")
served = torch.export.load(a.out).module()
tot, n = 0.0, 0
with torch.no_grad():
    for s in range(0, len(X), BATCH):
        xb = X[s:s + BATCH] if a.fault == "serve-tail" else X[s:s + BATCH] if len(X[s:s+BATCH]) == BATCH else None
        if xb is None:
            continue
        tot += F.mse_loss(served(xb), Y[s:s + len(xb)], reduction="sum").item(); n += len(xb)
say(f"exported-model eval mse {tot / n:.4f} over {n} rows")
