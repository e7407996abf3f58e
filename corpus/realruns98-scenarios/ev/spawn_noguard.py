# Flat training script (notebook exported to .py): no `if __name__ == "__main__":` guard.
# Uses the spawn start method "to be safe" for worker processes.
import logging
import torch, torch.nn as nn
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
mp.set_start_method("spawn", force=True)

g = torch.Generator().manual_seed(0)
X = torch.randn(1024, 16, generator=g)
Y = (X[:, 0] * X[:, 1] > 0).long()
loader = DataLoader(TensorDataset(X, Y), batch_size=64, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 2))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
logging.info("starting training: %d samples, %d batches", len(X), len(loader))
for epoch in range(2):
    for step, (x, y) in enumerate(loader):
        loss = nn.functional.cross_entropy(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
    logging.info("epoch %d loss %.4f", epoch, loss.item())
logging.info("done")
