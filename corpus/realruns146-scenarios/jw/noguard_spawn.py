# Training script without an `if __name__ == "__main__":` guard, DataLoader workers started with spawn.
import torch, torch.nn as nn
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset

mp.set_start_method("spawn", force=True)
print("building dataset", flush=True)
ds = TensorDataset(torch.randn(256, 16), torch.randint(0, 4, (256,)))
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 4))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
loader = DataLoader(ds, batch_size=16, shuffle=True, num_workers=2)
for epoch in range(2):
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if step % 4 == 0:
            print(f"epoch {epoch} step {step} loss {loss.item():.4f}", flush=True)
print("done", flush=True)
