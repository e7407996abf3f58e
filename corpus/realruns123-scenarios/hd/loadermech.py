"""Feature-regression training from per-rank .npz feature files; DataLoader worker start method configurable."""
import argparse, os, sys, datetime
import numpy as np
import torch, torch.nn as nn, torch.nn.functional as F
from torch.utils.data import Dataset, DataLoader
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common

p = argparse.ArgumentParser()
p.add_argument("--prepare", default=None)
p.add_argument("--data", default=None)
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--nranks", type=int, default=2)
p.add_argument("--files", type=int, default=4)
p.add_argument("--workers", type=int, default=0)
p.add_argument("--start-method", default=None)
p.add_argument("--normalize", default="none", help="none | lambda")
p.add_argument("--mmap", action="store_true")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--stamp", action="store_true")
args = p.parse_args()

def prepare():
    rng = np.random.default_rng(0)
    os.makedirs(args.prepare, exist_ok=True)
    for r in range(args.nranks):
        for i in range(args.files):
            x = rng.normal(size=(64, 16)).astype(np.float32); y = (x @ np.arange(16) / 16).astype(np.float32)
            fn = os.path.join(args.prepare, f"feats_rank{r}_{i:03d}")
            if args.fault == "objarray" and r == args.bad_rank and i == 2:
                # a newer extractor stored variable-length frame lists -> ragged object array
                x = np.array([rng.normal(size=(rng.integers(10, 20),)).astype(np.float32) for _ in range(64)], dtype=object)
            if args.mmap:
                np.save(fn + "_x.npy", x); np.save(fn + "_y.npy", y)
            else:
                np.savez(fn + ".npz", x=x, y=y)
    print("prepared", args.prepare)

class NpzFeatures(Dataset):
    def __init__(self, root, rank, transform=None):
        self.transform = transform
        xs, ys = [], []
        names = sorted(f for f in os.listdir(root) if f.startswith(f"feats_rank{rank}_") and not f.endswith("_y.npy"))
        for f in names:
            if args.mmap:
                xs.append(np.load(os.path.join(root, f), mmap_mode="r"))
                ys.append(np.load(os.path.join(root, f.replace("_x.npy", "_y.npy")), mmap_mode="r"))
            else:
                z = np.load(os.path.join(root, f))
                xs.append(z["x"]); ys.append(z["y"])
        self.x = np.concatenate(xs) if not args.mmap else xs
        self.y = np.concatenate(ys) if not args.mmap else ys
    def __len__(self):
        return sum(len(a) for a in self.x) if args.mmap else len(self.x)
    def __getitem__(self, i):
        if args.mmap:
            a, b = divmod(i, 64)
            x = torch.from_numpy(self.x[a][b]); y = torch.tensor(self.y[a][b])
        else:
            x = torch.from_numpy(self.x[i]); y = torch.tensor(self.y[i])
        if self.transform is not None:
            x = self.transform(x)
        return x, y

def main():
    rank, world = common.setup(30)
    log = common.get_logger("feat", rank, stamp=args.stamp)
    transform = None
    if args.normalize == "lambda":
        mean, std = 0.0, 1.0
        transform = lambda t: (t - mean) / std
    ds = NpzFeatures(args.data, rank, transform)
    log.info(f"features: {len(ds)} rows, workers={args.workers}, start_method={args.start_method}")
    dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=args.workers,
                    multiprocessing_context=args.start_method if args.workers > 0 else None)
    model = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 1))
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    for ep in range(args.epochs):
        for k, (x, y) in enumerate(dl):
            loss = F.mse_loss(model(x).squeeze(-1), y)
            opt.zero_grad(); loss.backward(); opt.step()
        log.info(f"epoch {ep} last-batch mse {loss.item():.4f}")
    log.info("training complete")
    common.cleanup()

if __name__ == "__main__":
    if args.prepare: prepare()
    else: main()
