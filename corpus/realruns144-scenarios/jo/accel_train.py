"""Accelerate training loop over per-rank sample files.

Data layout: data/rank{r}/part-XXXX.npz, each part holding `samples_per_part` samples (x, y).
--fault target-shape : --fault-rank's parts were exported with labels shaped (n, 1) instead of (n,)
--fault fd-leak      : (the dataset keeps every part file open in a handle cache; this is the code's normal
                        behaviour) --fault-rank's data was exported with one sample per part file
"""
import argparse, os, glob, time
import numpy as np
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader
from accelerate import Accelerator

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--root", default="data")
a = p.parse_args()

acc = Accelerator()
rank = acc.process_index
acc.print(f"distributed_type={acc.distributed_type} num_processes={acc.num_processes}")


def export(r):
    d = os.path.join(a.root, f"rank{r}")
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(r)
    n = 2048
    x = rng.normal(size=(n, 16)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + 2 * (x[:, 1] > 0).astype(np.int64)
    if a.fault == "target-shape" and r == a.fault_rank:
        y = y.reshape(-1, 1)
    per = 1 if (a.fault == "fd-leak" and r == a.fault_rank) else 64
    for i in range(0, n, per):
        np.savez(os.path.join(d, f"part-{i // per:05d}.npz"), x=x[i:i + per], y=y[i:i + per])
    return d, per


class PartDataset(Dataset):
    def __init__(self, d, per):
        self.files = sorted(glob.glob(os.path.join(d, "part-*.npz")))
        self.per = per
        self._handles = {}  # keep parts open: re-opening npz archives is slow on the shared FS

    def __len__(self):
        return len(self.files) * self.per

    def __getitem__(self, i):
        f = self.files[i // self.per]
        if f not in self._handles:
            self._handles[f] = np.load(f)
        z = self._handles[f]
        return torch.from_numpy(z["x"][i % self.per]), torch.as_tensor(z["y"][i % self.per])


d, per = export(rank)
acc.wait_for_everyone()
ds = PartDataset(d, per)
print(f"[rank {rank}] {len(ds.files)} part files, {len(ds)} samples", flush=True)
dl = DataLoader(ds, batch_size=32, shuffle=False)
model = nn.Sequential(nn.Linear(16, 64), nn.ReLU(), nn.Linear(64, 4))
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
model, opt, dl = acc.prepare(model, opt, dl)
lossf = nn.CrossEntropyLoss()
step = 0
while step < a.steps:
    for x, y in dl:
        loss = lossf(model(x), y)
        acc.backward(loss)
        opt.step(); opt.zero_grad()
        step += 1
        if step % 10 == 0:
            l = acc.gather(loss.detach()[None]).mean().item()
            acc.print(f"step {step} loss {l:.4f}")
        if step >= a.steps:
            break
acc.wait_for_everyone()
acc.print("done")
