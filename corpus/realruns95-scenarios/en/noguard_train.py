# Data-loading script converted from a notebook: module-level code, workers started with "spawn"
# (copied from a macOS setup). No `if __name__ == "__main__":` guard.
import numpy as np, torch, torch.nn as nn
from torch.utils.data import TensorDataset, DataLoader

print("building dataset ...", flush=True)
X = torch.from_numpy(np.random.default_rng(0).standard_normal((512, 16)).astype(np.float32))
Y = (X.sum(1) > 0).long()
ds = TensorDataset(X, Y)
loader = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2, multiprocessing_context="spawn")
model = nn.Linear(16, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for epoch in range(2):
    for i, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
