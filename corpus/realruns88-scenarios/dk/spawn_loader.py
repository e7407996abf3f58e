"""Single-process trainer script written as a notebook-style file (no __main__ guard),
with a DataLoader that uses the 'spawn' start method (e.g. copied from macOS code)."""
import sys, time
import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

ctx = sys.argv[1] if len(sys.argv) > 1 else "spawn"
print(f"building data (start method {ctx})", flush=True)
g = torch.Generator().manual_seed(0)
X = torch.randn(512, 16, generator=g)
y = (X.sum(1) > 0).long()
ds = TensorDataset(X, y)
dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, multiprocessing_context=ctx)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), 1e-2)
for ep in range(2):
    for i, (xb, yb) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {ep} loss {loss.item():.4f}", flush=True)
print("done")
