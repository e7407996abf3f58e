import argparse, os, sys, warnings
from datetime import timedelta
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--world", type=int, default=3)
p.add_argument("--port", type=int, default=48630)
a = p.parse_args()
import numpy as np, pandas as pd, torch, torch.distributed as dist, torch.multiprocessing as mp
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
def worker(rank, world, a):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(a.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=40))
    path = f"data/shard_{rank}.csv"
    if a.fault == "bad-row" and rank == 1:
        path = "data/shard_1_bad.csv"
    print(f"[rank {rank}] reading {path}", flush=True)
    df = pd.read_csv(path)
    X = df.drop(columns="label").to_numpy(dtype=np.float64); y = df["label"].values
    X = StandardScaler().fit_transform(X) if a.fault != "unscaled" else X * 1e4
    clf = LogisticRegression(max_iter=8 if a.fault == "unscaled" else 200)
    clf.fit(X, y)
    acc = torch.tensor([clf.score(X, y)])
    dist.all_reduce(acc)
    print(f"[rank {rank}] train acc {clf.score(X, y):.3f} mean over ranks {acc.item() / world:.3f}", flush=True)
    dist.destroy_process_group()
if __name__ == "__main__":
    mp.spawn(worker, args=(a.world, a), nprocs=a.world, join=True)
