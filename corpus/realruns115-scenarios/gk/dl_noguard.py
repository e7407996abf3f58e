# feature-extraction then training script written as a flat notebook export (no __main__ guard)
import torch, torch.nn as nn, multiprocessing as pymp
from torch.utils.data import Dataset, DataLoader

class Feats(Dataset):
    def __init__(self, n=64):
        g = torch.Generator().manual_seed(0)
        self.x = torch.randn(n, 16, generator=g); self.y = torch.randint(0, 4, (n,), generator=g)
    def __len__(self): return len(self.x)
    def __getitem__(self, i): return self.x[i], self.y[i]

print("building loader (spawn start method, macOS-style default)", flush=True)
model = nn.Linear(16, 4)
opt = torch.optim.Adam(model.parameters(), 1e-3)
dl = DataLoader(Feats(), batch_size=8, shuffle=True, num_workers=2, multiprocessing_context="spawn")
for ep in range(2):
    for i, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"epoch {ep} step {i} loss {loss.item():.4f}", flush=True)
print("done")
