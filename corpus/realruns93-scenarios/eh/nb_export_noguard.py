# Exported from notebook "train.ipynb" (File > Download as > Python), then run as a script.
import torch, torch.nn as nn
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset
mp.set_start_method("spawn", force=True)   # cell 2: "fixes" fork warnings on macOS

X = torch.randn(512, 10); y = (X.sum(1) > 0).long()
dl = DataLoader(TensorDataset(X, y), batch_size=64, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), 1e-3)
print("start training", flush=True)
for epoch in range(2):
    for xb, yb in dl:
        loss = nn.functional.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
