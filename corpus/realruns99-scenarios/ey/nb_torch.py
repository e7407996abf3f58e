"""Family: single-process PyTorch training written as a Jupyter notebook.
Usage: python nb_torch.py --fault FAULT --out NB.ipynb   (then execute NB with nbconvert)"""
import argparse, sys, os
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nbutil import write_nb

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=30)
p.add_argument("--out", required=True)
a = p.parse_args()
F, STEP = a.fault, a.step

imports = """
import os, math, time, warnings
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader, TensorDataset
torch.manual_seed(0)
print("torch", torch.__version__, "| cuda available:", torch.cuda.is_available())
"""

data = """
N, D, C = 512, 20, 4
X = torch.randn(N, D)
W_true = torch.randn(D, C)
y = (X @ W_true).argmax(1)
train_ds = TensorDataset(X, y)
print(len(train_ds), "samples")
"""

hidden_in = 20 if F != "shape" else 32   # bug: copied hidden size from another notebook
model_cell = f"""
model = nn.Sequential(
    nn.Linear(D, 64), nn.ReLU(),
    nn.Linear({hidden_in if F=='shape' else 64}, 64), nn.ReLU(),
    nn.Linear(64, C),
)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
print(sum(p.numel() for p in model.parameters()), "params")
"""

loss_expr = "F.cross_entropy(logits, yb)"
if F == "target":
    loss_expr = "F.mse_loss(logits, yb)"   # switched loss from CE to MSE but kept class labels
workers = 2 if F in ("worker-error", "spawn-pickle", "fdlimit", "none", "loader-timeout") else 0

ds_cell = ""
if F == "worker-error":
    ds_cell = """
class JsonlDataset(Dataset):
    def __init__(self, rows): self.rows = rows
    def __len__(self): return len(self.rows)
    def __getitem__(self, i):
        r = self.rows[i]
        return torch.tensor(r["features"]), torch.tensor(r["label"])
rows = [{"features": X[i].tolist(), "label": int(y[i])} for i in range(N)]
rows[300] = {"features": X[300].tolist(), "lable": int(y[300])}   # typo in one exported record
train_ds = JsonlDataset(rows)
"""
if F == "loader-timeout":
    ds_cell = """
import subprocess
class RemoteFeatureDataset(Dataset):
    \"\"\"Each sample is fetched through a helper command (stands in for an object-store read).\"\"\"
    def __init__(self, X, y): self.X, self.y = X, y
    def __len__(self): return len(self.X)
    def __getitem__(self, i):
        if i % 97 == 13:   # cold objects are fetched from the archive tier
            subprocess.run(["sleep", "12"], check=True)
        return self.X[i], self.y[i]
train_ds = RemoteFeatureDataset(X, y)
"""
if F == "spawn-pickle":
    ds_cell = """
class FeatureDataset(Dataset):
    def __init__(self, X, y): self.X, self.y = X, y
    def __len__(self): return len(self.X)
    def __getitem__(self, i): return self.X[i] * 0.5, self.y[i]
train_ds = FeatureDataset(X, y)
"""

loader_kw = f"batch_size=32, shuffle=True, num_workers={workers}"
if F == "spawn-pickle":
    loader_kw += ", multiprocessing_context='spawn'"
if F == "loader-timeout":
    loader_kw += ", timeout=10"
if F == "fdlimit":
    loader_kw = "batch_size=1, shuffle=False, num_workers=2, prefetch_factor=64"

loader_cell = f"""
loader = DataLoader(train_ds, {loader_kw})
"""
if F == "fdlimit":
    loader_cell = """
import resource
torch.multiprocessing.set_sharing_strategy('file_descriptor')
print("RLIMIT_NOFILE", resource.getrlimit(resource.RLIMIT_NOFILE))
big = TensorDataset(torch.randn(4096, 8), torch.randint(0, 4, (4096,)))
class ListDs(Dataset):
    def __len__(self): return 4096
    def __getitem__(self, i): return [torch.randn(4) for _ in range(8)], int(i % 4)
loader = DataLoader(ListDs(), batch_size=4, num_workers=2, prefetch_factor=32)
"""

prog = "from tqdm.auto import tqdm" if F != "tqdm-notebook" else "from tqdm.notebook import tqdm"

train_cell = f"""
{prog}
EPOCHS = 3
history = []
for epoch in range(EPOCHS):
    model.train()
    running = 0.0
    for step, (xb, yb) in enumerate(tqdm(loader, desc=f"epoch {{epoch}}", mininterval=5)):
        {'xb = xb.sum(0) if isinstance(xb, list) else xb' if F=='fdlimit' else ''}
        {'time.sleep(0.05)' if F=='interrupt' else ''}
        logits = model(xb)
        loss = {loss_expr}
        opt.zero_grad()
        loss.backward()
        opt.step()
        running += loss.item()
    history.append(running / (step + 1))
    print(f"epoch {{epoch}}  train_loss={{history[-1]:.4f}}")
"""
if F == "fdlimit":
    train_cell = """
n = 0
held = []
for xs, yb in loader:
    held.append(xs)          # keep batches for later inspection (leaks shared fds)
    n += 1
    if n % 200 == 0: print("batches", n)
print("done", n)
"""

if F == "asyncio":
    train_cell = """
import asyncio
async def train_epoch(epoch):
    running = 0.0
    for step, (xb, yb) in enumerate(loader):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
        running += loss.item()
        if step % 8 == 0:
            await asyncio.sleep(0)   # let the metrics uploader run
    return running / (step + 1)

async def main():
    for epoch in range(3):
        print(f"epoch {epoch} loss={await train_epoch(epoch):.4f}")

asyncio.run(main())
"""

if F == "segfault":
    train_cell = """
import ctypes
# zero-copy peek at the first-layer weights through the raw buffer (snippet from a forum post)
def weight_snapshot(layer, nbytes=1 << 20):
    w = layer.weight.detach().clone().repeat(2048, 1)   # flatten into one large buffer
    ptr = w.data_ptr()
    del w                                   # buffer is freed here ...
    return ctypes.string_at(ptr, nbytes)    # ... but read afterwards
for epoch in range(3):
    for step, (xb, yb) in enumerate(loader):
        loss = F.cross_entropy(model(xb), yb)
        opt.zero_grad(); loss.backward(); opt.step()
    print(f"epoch {epoch} loss={loss.item():.4f}", flush=True)
    snap = weight_snapshot(model[0])
    print("snapshot bytes", len(snap), flush=True)
"""

save_cell = """
os.makedirs("artifacts", exist_ok=True)
torch.save(model.state_dict(), "artifacts/model.pt")
print("saved", os.path.getsize("artifacts/model.pt"), "bytes")
"""
if F == "ckpt-dir":
    save_cell = """
run_name = time.strftime("run-%Y%m%d")
torch.save({"model": model.state_dict(), "opt": opt.state_dict()}, f"checkpoints/{run_name}/last.pt")
print("checkpoint saved")
"""

warn_cell = ""
if F == "none":
    warn_cell = """
# old helper from the team utils, still uses deprecated APIs
warnings.simplefilter("default")
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)
sched.step()   # called before opt.step(): warns
print(torch.tensor([1.0, 2.0]).new_tensor(torch.tensor([3.0])))
"""

eval_cell = """
model.eval()
with torch.no_grad():
    acc = (model(X).argmax(1) == y).float().mean().item()
print(f"train accuracy {acc:.3f}")
"""

cells = ["md:# Quick classifier experiment", imports, data]
if ds_cell: cells.append(ds_cell)
cells += [model_cell]
if warn_cell: cells.append(warn_cell)
cells += [loader_cell, train_cell, eval_cell, save_cell]
write_nb(cells, a.out)
