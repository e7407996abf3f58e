"""Single-process training script written without an `if __name__ == "__main__":` guard, using DataLoader
workers with the spawn start method (as on macOS/Windows, or set explicitly to avoid fork issues)."""
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

ctx = sys.argv[1] if len(sys.argv) > 1 else "spawn"
torch.manual_seed(0)
x = torch.randn(512, 20)
y = (x[:, :5].sum(1) > 0).long()
ds = TensorDataset(x, y)
model = nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
print(f"dataset={len(ds)} model params={sum(p.numel() for p in model.parameters())} start_method={ctx}")
dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, multiprocessing_context=ctx)
for epoch in range(3):
    tot = 0.0
    for xb, yb in dl:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
    print(f"epoch {epoch} mean loss {tot / len(dl):.4f}")
print("done")
