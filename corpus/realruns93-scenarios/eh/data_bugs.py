"""DataLoader / data pipeline bugs in a small single-process training script.
--fault: none | lambda_spawn | worker_err | collate | missing | empty | fds
"""
import argparse, os, sys, time, logging, glob
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--data", default="/tmp/eh_data")
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
log = logging.getLogger("data_train")

def make_shards(root, n=40):
    os.makedirs(root, exist_ok=True)
    for i in range(n):
        fn = os.path.join(root, f"sample_{i:04d}.txt")
        if not os.path.exists(fn):
            with open(fn, "w") as f:
                L = 12 if args.fault != "collate" else 8 + (i % 5)
                f.write(" ".join(str((i * 7 + j) % 50) for j in range(L)) + "\n")

class TextShards(Dataset):
    def __init__(self, root, transform=None):
        self.files = sorted(glob.glob(os.path.join(root, "*.txt")))
        self.transform = transform
        self.meta = {os.path.basename(f): {"split": "train"} for f in self.files}
        self.handles = []
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        fn = self.files[i]
        if args.fault == "fds":
            fh = open(fn)   # kept open for "fast re-reads"
            self.handles.append(fh)
            txt = fh.read()
        else:
            with open(fn) as fh:
                txt = fh.read()
        ids = torch.tensor([int(t) for t in txt.split()])
        if args.fault == "worker_err":
            split = self.meta[fn]["split"]  # keyed by basename, looked up by full path
        if self.transform:
            ids = self.transform(ids)
        return ids[:-1], ids[1:]

def main():
    if args.fault != "missing":
        make_shards(args.data)
    if args.fault == "missing":
        with open(os.path.join(args.data, "train_manifest.json")) as f:
            pass
    root = args.data if args.fault != "empty" else os.path.join(args.data, "train")
    ds = TextShards(root, transform=(lambda t: t.clamp(max=49)) if args.fault == "lambda_spawn" else None)
    log.info("dataset: %d files under %s", len(ds), root)
    kw = dict(batch_size=4, shuffle=True, num_workers=args.workers)
    if args.workers > 0:
        kw["multiprocessing_context"] = "spawn" if args.fault == "lambda_spawn" else None
        kw["persistent_workers"] = False
    dl = DataLoader(ds, **kw)
    model = nn.Sequential(nn.Embedding(50, 32), nn.Linear(32, 50))
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    for ep in range(args.epochs):
        for i, (x, y) in enumerate(dl):
            loss = nn.functional.cross_entropy(model(x).flatten(0, 1), y.flatten())
            opt.zero_grad(); loss.backward(); opt.step()
            if i % 3 == 0:
                log.info("epoch %d it %d loss %.4f", ep, i, loss.item())
    log.info("done")

if __name__ == "__main__":
    main()
