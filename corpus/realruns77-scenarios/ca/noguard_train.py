"""Script family: a training script written without an `if __name__ == "__main__":` guard, using
spawn-started DataLoader workers (the default on macOS/Windows; set explicitly here). Run with %run / python."""
import time
import torch, torch.nn as nn, torch.nn.functional as F
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset

mp.set_start_method("spawn", force=True)
torch.manual_seed(0)
X = torch.randn(2048, 10); y = (X.sum(1) > 0).long()
loader = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print("starting training with", loader.num_workers, "workers")
for epoch in range(2):
    for xb, yb in loader:
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}")
