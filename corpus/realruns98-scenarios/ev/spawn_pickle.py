"""DataLoader workers started with the 'spawn' context (as on macOS/Windows or when CUDA is used):
the dataset and its transform must be picklable.  --transform lambda|local|ok
"""
import argparse, logging, sys
import torch, torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset, Dataset

log = logging.getLogger("spawnjob")


class Wrapped(Dataset):
    def __init__(self, base, transform):
        self.base, self.transform = base, transform

    def __len__(self):
        return len(self.base)

    def __getitem__(self, i):
        x, y = self.base[i]
        return self.transform(x), y


def standardize(x):
    return (x - 0.5) / 0.29


def make_transform(kind, mean, std):
    if kind == "lambda":
        return lambda x: (x - mean) / std
    if kind == "local":
        def _norm(x):
            return (x - mean) / std
        return _norm
    return standardize


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--transform", default="ok")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--ctx", default="spawn")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s")
    g = torch.Generator().manual_seed(0)
    X = torch.rand(512, 20, generator=g); Y = (X.sum(1) > 10).long()
    base = TensorDataset(X, Y)
    mean, std = X.mean().item(), X.std().item()
    ds = Wrapped(base, make_transform(args.transform, mean, std))
    dl = DataLoader(ds, batch_size=32, shuffle=True, num_workers=args.workers,
                    multiprocessing_context=args.ctx, persistent_workers=True)
    model = nn.Sequential(nn.Linear(20, 32), nn.Tanh(), nn.Linear(32, 2))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    log.info(f"dataset mean={mean:.4f} std={std:.4f}; workers={args.workers} context={args.ctx}")
    for ep in range(3):
        tot = 0.0
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step(); tot += loss.item()
        log.info(f"epoch {ep} mean loss {tot / len(dl):.4f}")
    log.info("done")


if __name__ == "__main__":
    main()
