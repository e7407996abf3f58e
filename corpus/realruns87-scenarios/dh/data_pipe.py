"""Sequence classifier trained from a folder of .npy shards with a DataLoader.

--fault: none | ragged (shards of different length, no collate_fn) | badfile (one shard is not an
         .npy file -> decoding error in a worker) | killworker (a worker is SIGKILLed, as by the OOM
         killer) | empty (glob pattern matches nothing) | fsize (checkpoint written under a small
         `ulimit -f`) | lambda (spawn start method with a lambda transform)
"""
import argparse, glob, os, signal, sys, time, warnings
import numpy as np
import torch
import torch.nn as nn
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--data", default="data/shards")
p.add_argument("--pattern", default="*.npy")
p.add_argument("--fault", default="none")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--ckpt", default=None)
p.add_argument("--export", default=None, help="write penultimate-layer features of the train set (.npy)")
p.add_argument("--kill-index", type=int, default=37)
args = p.parse_args()


def make_data(root, ragged=False, bad=False):
    os.makedirs(root, exist_ok=True)
    rng = np.random.default_rng(0)
    for i in range(64):
        n = 20 if not ragged else int(rng.integers(18, 23))
        np.save(os.path.join(root, f"sample_{i:04d}.npy"), rng.standard_normal((n, 8)).astype("float32"))
    if bad:
        with open(os.path.join(root, "sample_0041.npy"), "wb") as f:
            f.write(b"<html><body>503 Service Unavailable</body></html>\n")


class ShardDS(Dataset):
    def __init__(self, root, pattern, transform=None):
        self.files = sorted(glob.glob(os.path.join(root, pattern)))
        self.transform = transform
    def __len__(self):
        return len(self.files)
    def __getitem__(self, i):
        if args.fault == "killworker" and i == args.kill_index:
            os.kill(os.getpid(), signal.SIGKILL)
        x = torch.from_numpy(np.load(self.files[i]))
        if self.transform:
            x = self.transform(x)
        y = int(x.sum() > 0)
        return x, y


def main():
    if args.fault == "ragged":
        make_data(args.data, ragged=True)
    elif args.fault == "badfile":
        make_data(args.data, bad=True)
    elif not glob.glob(os.path.join(args.data, "*.npy")):
        make_data(args.data)
    tf = None
    if args.fault == "lambda":
        tf = lambda x: (x - x.mean()) / (x.std() + 1e-6)
    ds = ShardDS(args.data, args.pattern, tf)
    print(f"found {len(ds)} files under {args.data}/{args.pattern}", flush=True)
    kw = {}
    if args.fault == "lambda":
        kw["multiprocessing_context"] = "spawn"
    dl = DataLoader(ds, batch_size=8, shuffle=True, num_workers=args.workers, **kw)
    model = nn.Sequential(nn.Flatten(), nn.Linear(160, 32), nn.ReLU(), nn.Linear(32, 2))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    step = 0
    for ep in range(args.epochs):
        for x, y in dl:
            loss = nn.functional.cross_entropy(model(x), y)
            opt.zero_grad(); loss.backward(); opt.step()
            if step % 2 == 0:
                print(f"epoch {ep} step {step} loss {loss.item():.4f}", flush=True)
            step += 1
    if args.ckpt:
        os.makedirs(os.path.dirname(args.ckpt) or ".", exist_ok=True)
        print(f"saving {args.ckpt}", flush=True)
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(),
                    "big_buffer": torch.zeros(400_000)}, args.ckpt)
    if args.export:
        os.makedirs(os.path.dirname(args.export) or ".", exist_ok=True)
        with torch.no_grad():
            feats = torch.cat([model[:3](x) for x, _ in DataLoader(ds, batch_size=8)] * 200).numpy()
        print(f"exporting features {feats.shape} to {args.export}", flush=True)
        if args.export.endswith(".csv"):
            np.savetxt(args.export, feats, delimiter=",", fmt="%.6f")
        else:
            np.save(args.export, feats)
    print("done", flush=True)


if __name__ == "__main__":
    main()
