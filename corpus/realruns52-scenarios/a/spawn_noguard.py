"""Quick training script written without a __main__ guard; DataLoader workers use the 'spawn' start method (as on macOS/Windows)."""
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset
import torch.multiprocessing as mp

mp.set_start_method("spawn", force=True)
ds = TensorDataset(torch.randn(256, 10), torch.randint(0, 2, (256,)))
dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=2)
model = nn.Linear(10, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
print("starting training", flush=True)
for epoch in range(2):
    for x, y in dl:
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {epoch} loss {loss.item():.4f}", flush=True)
