"""Notebook-style training script exported to a .py: no __main__ guard (family: start-method set-up)."""
import multiprocessing as pymp
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

pymp.set_start_method("spawn", force=True)   # "safer than fork with threads"
print("building dataset", flush=True)
x = torch.randn(256, 16); y = x.sum(1, keepdim=True)
dl = DataLoader(TensorDataset(x, y), batch_size=16, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for epoch in range(2):
    for i, (xb, yb) in enumerate(dl):
        loss = nn.functional.mse_loss(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
        if i % 5 == 0:
            print(f"epoch {epoch} it {i} loss {loss.item():.4f}", flush=True)
print("done", flush=True)
