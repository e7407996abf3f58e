"""Small CNN on synthetic 16x16 images. --fault selects a bug, --rank/--step where it appears."""
import argparse, os, sys, time, torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
sys.path.insert(0, os.path.dirname(__file__)); from common import setup, avg, teardown
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none"); p.add_argument("--rank", type=int, default=0)
p.add_argument("--step", type=int, default=5); p.add_argument("--steps", type=int, default=12)
p.add_argument("--workers", type=int, default=0); p.add_argument("--tqdm", action="store_true")
p.add_argument("--anomaly", action="store_true")
a = p.parse_args()
rank, ws = setup(); me = (rank == a.rank)
torch.manual_seed(0 + rank)
class Imgs(Dataset):
    def __init__(self, n, fault):
        self.n, self.fault = n, fault
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(n, 3, 16, 16, generator=g); self.y = torch.randint(0, 10, (n,), generator=g)
        if fault == "nan_input":      # one corrupted sample from a bad normalisation (std==0)
            std = self.x[a.step * 8 + 3].std(dim=(1, 2), keepdim=True); std[1] = 0.0
            self.x[a.step * 8 + 3] = (self.x[a.step * 8 + 3] - 0) / std
        if fault == "double_input":
            self.x = self.x.double()
    def __len__(self): return self.n
    def __getitem__(self, i):
        x = self.x[i]
        if self.fault == "ragged" and i == a.step * 8 + 5:
            x = F.interpolate(x[None], size=(18, 18))[0]   # resized with the wrong config
        if self.fault == "worker_keyerror" and i == a.step * 8 + 2:
            meta = {"label": int(self.y[i])}; return x, meta["class_id"]
        return x, self.y[i]
class Net(nn.Module):
    def __init__(self, flat=32 * 4 * 4):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1); self.c2 = nn.Conv2d(16, 32, 3, padding=1)
        self.fc = nn.Linear(flat, 10)
    def forward(self, x):
        x = F.max_pool2d(F.relu(self.c1(x)), 2); x = F.max_pool2d(F.relu(self.c2(x)), 2)
        if a.fault == "view_nc" and me:
            x = x.transpose(1, 3)
        return self.fc(x.view(x.size(0), -1))
n = 8 * (a.steps + 2)
ds = Imgs(0 if (a.fault == "empty" and me) else n, a.fault if me else "none")
dl = DataLoader(ds, batch_size=8, shuffle=(a.fault not in ("nan_input","ragged","worker_keyerror")), num_workers=a.workers)
model = Net(flat=(32 * 8 * 8 if (a.fault == "flat" and me) else 32 * 4 * 4))
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
if a.anomaly: torch.autograd.set_detect_anomaly(True)
it = dl
if a.tqdm:
    from tqdm import tqdm; it = tqdm(dl, desc=f"epoch 0 rank{rank}", file=sys.stdout, mininterval=0)
print(f"[rank{rank}] train samples={len(ds)} batches={len(dl)} world={ws}", flush=True)
for step, (x, y) in enumerate(it):
    if step >= a.steps: break
    out = model(x)
    if a.fault == "onehot" and me and step == a.step:
        y = F.one_hot(y, 10)[:, :9].float()      # label smoothing helper dropped a class
    loss = F.cross_entropy(out, y, reduction=("none" if (a.fault == "nonscalar" and me) else "mean"))
    opt.zero_grad()
    if a.fault == "detach" and me:
        loss = loss.detach().requires_grad_(False)
    loss.backward()
    if a.fault == "backward_twice" and me and step == a.step:
        (loss * 0.1).backward()                  # "aux" loss reusing the freed graph
    opt.step()
    l = avg(loss.item(), ws)
    if not a.tqdm:
        print(f"[rank{rank}] step {step} local_loss {loss.item():.4f} avg_loss {l:.4f} lr 0.05", flush=True)
    if not torch.isfinite(loss).all():
        print(f"[rank{rank}] step {step} non-finite loss detected, stopping", flush=True); sys.exit(3)
print(f"[rank{rank}] done", flush=True)
teardown()
