"""Tabular regression from per-rank CSV exports (pandas), launched with torch.multiprocessing.spawn."""
import argparse, os, sys, datetime
import numpy as np, pandas as pd
import torch, torch.nn as nn, torch.nn.functional as F
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.utils.data import TensorDataset, DataLoader
from torch.utils.data.distributed import DistributedSampler

FEATURES = ["age", "income", "tenure", "visits"]
p = argparse.ArgumentParser()
p.add_argument("--prepare", default=None)
p.add_argument("--data", default=None)
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--nprocs", type=int, default=2)
p.add_argument("--mport", type=int, default=45828)
args = p.parse_args()

def prepare():
    rng = np.random.default_rng(5)
    os.makedirs(args.prepare, exist_ok=True)
    for r in range(args.nprocs):
        df = pd.DataFrame({"age": rng.integers(18, 80, 500), "income": rng.normal(50, 15, 500).round(2),
                           "tenure": rng.integers(0, 30, 500), "visits": rng.poisson(3, 500)})
        df["spend"] = (0.3 * df.income + 2 * df.visits + rng.normal(0, 1, 500)).round(2)
        if args.fault == "dropcol" and r == args.bad_rank:
            df = df.drop(columns=["income"])        # export from the new CRM omits PII column
        df.to_csv(os.path.join(args.prepare, f"part-{r:05d}.csv"), index=False)
    print("prepared", args.prepare)

def worker(rank, world):
    os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ["MASTER_PORT"] = str(args.mport)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=datetime.timedelta(seconds=30))
    df = pd.read_csv(os.path.join(args.data, f"part-{rank:05d}.csv"))
    print(f"[rank {rank}] read {len(df)} rows, columns={list(df.columns)}", flush=True)
    x = torch.tensor(df[FEATURES].to_numpy(np.float32)); y = torch.tensor(df["spend"].to_numpy(np.float32))
    x = (x - x.mean(0)) / x.std(0)
    dl = DataLoader(TensorDataset(x, y), batch_size=50, shuffle=True)
    model = nn.parallel.DistributedDataParallel(nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1)))
    opt = torch.optim.Adam(model.parameters(), 1e-2)
    for ep in range(5):
        for xb, yb in dl:
            loss = F.mse_loss(model(xb).squeeze(-1), yb); opt.zero_grad(); loss.backward(); opt.step()
        print(f"[rank {rank}] epoch {ep} mse {loss.item():.3f}", flush=True)
    dist.destroy_process_group()

if __name__ == "__main__":
    if args.prepare:
        prepare()
    else:
        mp.spawn(worker, args=(args.nprocs,), nprocs=args.nprocs)
