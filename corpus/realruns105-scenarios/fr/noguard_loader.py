"""Quick notebook-style training script turned into a .py file: no __main__ guard, DataLoader with spawn workers."""
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset

print("building dataset ...", flush=True)
X = torch.randn(512, 16); Y = (X.sum(1) > 0).long()
ds = TensorDataset(X, Y)
# spawn context chosen because fork + OpenMP threads deadlocked on the cluster image
dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, multiprocessing_context="spawn")
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for i, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if i % 4 == 0:
            print(f"epoch {epoch} it {i} loss {loss.item():.4f}", flush=True)
print("done", flush=True)
