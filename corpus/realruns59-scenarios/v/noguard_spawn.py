# quick experiment script: top-level code, DataLoader workers started with 'spawn'
# (copied from a notebook; no __main__ guard)
import time, torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader
import torch.multiprocessing as mp

mp.set_start_method("spawn", force=True)
torch.manual_seed(0)
X = torch.randn(512, 16); Y = (X[:, 0] > 0).long()
ds = TensorDataset(X, Y)
loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, persistent_workers=True)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print(f"training on {len(ds)} samples, {len(loader)} batches/epoch", flush=True)
for epoch in range(3):
    t0 = time.time()
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f} ({time.time()-t0:.2f}s)", flush=True)
