"""Quick feature-regression script written as a flat notebook export (no __main__ guard), spawn-started DataLoader workers."""
import os, sys
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import TensorDataset, DataLoader

print(f"[setup] torch {torch.__version__}, pid {os.getpid()}", flush=True)
rng = np.random.default_rng(0)
x = torch.from_numpy(rng.normal(size=(512, 16)).astype(np.float32))
y = x.sum(1, keepdim=True)
ds = TensorDataset(x, y)
# spawn avoids fork-related deadlocks with OpenMP threads (copied from the cluster recipe)
dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, multiprocessing_context="spawn")
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.Adam(model.parameters(), 1e-3)
for ep in range(2):
    for xb, yb in dl:
        loss = F.mse_loss(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {ep} mse {loss.item():.4f}", flush=True)
print("done", flush=True)
