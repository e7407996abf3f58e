"""K-fold cross-validation of an XGBoost model, one fold per process via torch.multiprocessing.spawn.
Fold AUCs are all_gathered over gloo; rank 0 reports the mean.

--fault none       healthy
--fault noguard    the module-level launch is not protected by `if __name__ == "__main__":`
                   (as in a notebook-exported script)
--fault lambda     the target transform is a lambda handed to the workers through spawn args
"""
import argparse
import os
import sys
import time
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--folds", type=int, default=2)
p.add_argument("--port", default="43230")
args = p.parse_args()


def make_data(n=5000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 10)).astype(np.float32)
    y = (X[:, 0] - 0.7 * X[:, 3] + 0.4 * X[:, 6] ** 2 + rng.normal(scale=0.8, size=n) > 0.5).astype(np.float32)
    return X, y


def run_fold(rank, world, target_fn, port):
    import xgboost as xgb
    from sklearn.metrics import roc_auc_score
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = port
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=30))
    X, y = make_data()
    y = target_fn(y)
    fold = np.arange(len(y)) % world == rank
    dtr = xgb.DMatrix(X[~fold], label=y[~fold])
    dva = xgb.DMatrix(X[fold], label=y[fold])
    t0 = time.time()
    bst = xgb.train({"objective": "binary:logistic", "max_depth": 5, "eta": 0.1, "nthread": 1,
                     "eval_metric": "logloss"}, dtr, 80, evals=[(dva, f"fold{rank}")], verbose_eval=40)
    auc = roc_auc_score(y[fold], bst.predict(dva))
    print(f"[fold {rank}] auc={auc:.4f} ({time.time()-t0:.1f}s)", flush=True)
    out = [None] * world
    dist.all_gather_object(out, auc)
    if rank == 0:
        print(f"cv auc mean={np.mean(out):.4f} std={np.std(out):.4f} folds={out}", flush=True)
    dist.destroy_process_group()


def identity(y):
    return y


def main():
    print(f"launching {args.folds} fold workers with torch.multiprocessing.spawn", flush=True)
    target_fn = identity
    if args.fault == "lambda":
        target_fn = lambda y: (y > 0.5).astype(np.float32)  # noqa: E731
    mp.spawn(run_fold, args=(args.folds, target_fn, args.port), nprocs=args.folds, join=True)
    print("cross-validation done", flush=True)


if __name__ == "__main__" or args.fault == "noguard":
    main()
