"""Out-of-core SGDClassifier training with tqdm, periodic model pickles, optional resume; DDP-style metric
all-reduce when launched by torchrun."""
import argparse, os, pickle, time, warnings
from datetime import timedelta
import numpy as np
import torch, torch.distributed as dist
from tqdm import tqdm
from sklearn.linear_model import SGDClassifier
p = argparse.ArgumentParser()
p.add_argument("--epochs", type=int, default=5)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--step-sleep", type=float, default=0.0)
p.add_argument("--out-dir", default="/work/rr99/ez/out/sgd")
p.add_argument("--resume", default="")
p.add_argument("--save-every", type=int, default=1)
args = p.parse_args()
rank = int(os.environ.get("RANK", 0)); world = int(os.environ.get("WORLD_SIZE", 1))
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=30))
d = np.load(f"/work/rr99/ez/data/shard_{rank:02d}.npz"); X, y = d["X"], d["y"]
clf = SGDClassifier(loss="log_loss", alpha=1e-4, random_state=rank)
start = 0
if args.resume:
    with open(args.resume, "rb") as f:
        state = pickle.load(f)
    clf, start = state["model"], state["epoch"] + 1
    print(f"[rank{rank}] resumed from {args.resume} at epoch {start}", flush=True)
os.makedirs(args.out_dir, exist_ok=True)
for ep in range(start, args.epochs):
    bar = tqdm(range(0, len(y), args.batch), desc=f"rank{rank} epoch {ep}", disable=False, mininterval=0.5)
    for i in bar:
        clf.partial_fit(X[i:i + args.batch], y[i:i + args.batch], classes=[0.0, 1.0])
        if args.step_sleep: time.sleep(args.step_sleep)
    acc = torch.tensor([clf.score(X, y)])
    if world > 1:
        dist.all_reduce(acc); acc /= world
    if rank == 0:
        print(f"epoch {ep} mean acc {acc.item():.4f}", flush=True)
        if (ep + 1) % args.save_every == 0:
            path = os.path.join(args.out_dir, f"sgd_epoch{ep}.pkl")
            with open(path, "wb") as f:
                pickle.dump({"model": clf, "epoch": ep}, f)
            print(f"saved {path}", flush=True)
if world > 1:
    dist.destroy_process_group()
print(f"[rank{rank}] finished", flush=True)
