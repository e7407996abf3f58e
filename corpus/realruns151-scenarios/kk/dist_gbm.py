import argparse, os, sys, time, logging
from datetime import timedelta
p = argparse.ArgumentParser()
p.add_argument("--lib", default="lightgbm")
p.add_argument("--fault", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--shards", default="data/shard_{rank}.csv")
p.add_argument("--rounds", type=int, default=20)
a = p.parse_args()
import torch, torch.distributed as dist
import numpy as np, pandas as pd
dist.init_process_group("gloo", timeout=timedelta(seconds=40))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
log = logging.getLogger("dist_gbm")
path = a.shards.format(rank=rank)
if a.fault == "shard-missing" and rank == a.bad_rank:
    path = path.replace("shard_", "shard-")  # renamed by the new export job
log.info("world=%d loading %s", world, path)
df = pd.read_csv(path)
X, y = df.drop(columns="label").values, df["label"].values
n = int(0.8 * len(X))
params_extra = {}
if a.lib == "lightgbm":
    import lightgbm as lgb
    params = {"objective": "multiclass", "num_class": 3, "num_leaves": 15, "num_threads": 1, "verbose": -1}
    if a.fault == "bad-param" and rank == a.bad_rank:
        params["num_class"] = 2   # per-host override file left over from the binary experiment
    bst = lgb.train(params, lgb.Dataset(X[:n], y[:n]), a.rounds)
    pred = bst.predict(X[n:])
elif a.lib == "catboost":
    from catboost import CatBoostClassifier
    m = CatBoostClassifier(iterations=a.rounds, depth=4, verbose=max(5, a.rounds // 20), thread_count=1, loss_function="MultiClass",
                           train_dir=f"out/cb_rank{rank}")
    if a.fault == "nan-label" and rank == a.bad_rank:
        y = y.astype(float); y[5] = np.nan
    m.fit(X[:n], y[:n])
    pred = m.predict_proba(X[n:])
ll = -np.log(np.clip(pred[np.arange(len(pred)), y[n:].astype(int)], 1e-9, 1)).mean()
t = torch.tensor([ll, 1.0])
dist.all_reduce(t)
log.info("local logloss %.4f  global mean %.4f", ll, (t[0] / t[1]).item())
dist.barrier()
dist.destroy_process_group()
