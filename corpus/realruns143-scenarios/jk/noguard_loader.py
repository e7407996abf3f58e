# quick experiment script: no __main__ guard; start method switched to spawn "to be safe with threads"
import logging, sys
import torch, torch.nn as nn
import torch.multiprocessing as mp
from torch.utils.data import DataLoader, TensorDataset
logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s %(message)s")
mp.set_start_method("spawn", force=True)
x = torch.randn(1024, 16); y = (x.sum(1) > 0).long()
dl = DataLoader(TensorDataset(x, y), batch_size=32, shuffle=True, num_workers=2)
model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 2))
opt = torch.optim.Adam(model.parameters(), 1e-3)
logging.info("starting training, %d batches per epoch", len(dl))
for step, (xb, yb) in enumerate(dl):
    loss = nn.functional.cross_entropy(model(xb), yb)
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 8 == 0:
        logging.info("step %d loss %.4f", step, loss.item())
logging.info("done")
