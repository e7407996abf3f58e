"""Data-parallel bagging of gradient-boosted trees (XGBoost / LightGBM) with torch.distributed.

Each rank trains a booster on its own shard of a synthetic fraud table, then the
ranks average their validation predictions and feature importances with gloo
all_reduce. Rank 0 logs the ensemble metric and saves the boosters.

--fault selects a real bug on --fault-rank:
  none      healthy
  labels    that rank reads a shard from the newer export where is_fraud is a status
            code 0/1/2 (2 = under review) but the objective stays binary:logistic
  varsel    per-shard VarianceThreshold drops a column that is constant in that shard
            (importance vectors then have different lengths on different ranks)
  numclass  LightGBM objective switched to multiclass without num_class (all ranks)
  slowpid   nothing in the code: the rank writes its pid so it can be killed from outside
"""
import argparse
import logging
import os
import sys
import time
import warnings
from datetime import timedelta

import numpy as np
import torch
import torch.distributed as dist

p = argparse.ArgumentParser()
p.add_argument("--lib", default="xgboost", choices=["xgboost", "lightgbm"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--rounds", type=int, default=4)
p.add_argument("--trees", type=int, default=60)
p.add_argument("--rows", type=int, default=6000)
p.add_argument("--pg-timeout", type=int, default=30)
p.add_argument("--out", default="out/gbm")
p.add_argument("--round-sleep", type=float, default=0.0)
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=args.pg_timeout))
rank, world = dist.get_rank(), dist.get_world_size()
logging.basicConfig(level=logging.INFO,
                    format=f"%(asctime)s [rank{rank}] %(levelname)s %(message)s")
log = logging.getLogger("bagging")
faulty = rank == args.fault_rank

rng = np.random.default_rng(1234)
n_feat = 8
X_all = rng.normal(size=(args.rows, n_feat)).astype(np.float32)
X_all[:, 5] = rng.integers(0, 3, size=args.rows)            # channel code
w = np.array([1.2, -0.8, 0.5, 0.0, 0.3, 0.6, -0.2, 0.9])
y_all = (X_all @ w + rng.normal(scale=1.0, size=args.rows) > 1.0).astype(np.float32)
n_val = args.rows // 5
Xv, yv = X_all[:n_val], y_all[:n_val]
Xs, ys = X_all[n_val:][rank::world].copy(), y_all[n_val:][rank::world].copy()
if args.fault == "labels" and faulty:
    # newer export: is_fraud carries the case status code (0 legit, 1 fraud, 2 under review)
    review = np.random.default_rng(rank).uniform(size=len(ys)) < 0.04
    ys[review] = 2.0
if args.fault == "emptyshard" and faulty:
    # this rank's partition only holds Jan-Sep records, the training window starts 2026-10-01
    ts = np.array([f"2026-0{1 + (i % 9)}-15" for i in range(len(ys))])
    mask = ts > "2026-10-01"
    Xs, ys = Xs[mask], ys[mask]
if args.fault == "varsel" and faulty:
    # this shard comes from a single sales channel
    Xs[:, 5] = 1.0
log.info("shard rows=%d pos_rate=%.3f val_rows=%d world=%d lib=%s",
         len(ys), float((ys == 1).mean()) if len(ys) else float("nan"), n_val, world, args.lib)

keep = np.arange(n_feat)
if args.fault == "varsel":
    from sklearn.feature_selection import VarianceThreshold
    sel = VarianceThreshold(1e-6).fit(Xs)
    keep = np.flatnonzero(sel.get_support())
    log.info("variance filter kept %d/%d features", len(keep), n_feat)
Xs_k, Xv_k = Xs[:, keep], Xv[:, keep]

if args.lib == "xgboost":
    import xgboost as xgb
    params = {"objective": "binary:logistic", "eval_metric": "auc", "max_depth": 4,
              "eta": 0.1, "nthread": 1, "silent": 1}
else:
    import lightgbm as lgb
    params = {"objective": "binary", "metric": "auc", "num_leaves": 15, "learning_rate": 0.1,
              "num_threads": 1, "min_data_in_leaf": 400, "verbose": 0}
    if args.fault == "numclass":
        params["objective"] = "multiclass"
        params["metric"] = "multi_logloss"

if args.fault == "slowpid":
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, f"pid_rank{rank}"), "w") as f:
        f.write(str(os.getpid()))

os.makedirs(args.out, exist_ok=True)
for r in range(args.rounds):
    t0 = time.time()
    seed = 100 * r + rank
    idx = np.random.default_rng(seed).integers(0, len(ys), size=len(ys))  # bootstrap
    if args.lib == "xgboost":
        dtr = xgb.DMatrix(Xs_k[idx], label=ys[idx])
        dva = xgb.DMatrix(Xv_k, label=yv)
        evals_result = {}
        booster = xgb.train({**params, "seed": seed}, dtr, num_boost_round=args.trees,
                            evals=[(dva, "val")], evals_result=evals_result, verbose_eval=20)
        pred = booster.predict(dva)
        imp_d = booster.get_score(importance_type="gain")
        imp = np.array([imp_d.get(f"f{i}", 0.0) for i in range(len(keep))], dtype=np.float32)
        booster.save_model(os.path.join(args.out, f"booster_r{r}_rank{rank}.json"))
    else:
        dtr = lgb.Dataset(Xs_k[idx], label=ys[idx])
        dva = lgb.Dataset(Xv_k, label=yv, reference=dtr)
        booster = lgb.train({**params, "seed": seed}, dtr, num_boost_round=args.trees,
                            valid_sets=[dva], valid_names=["val"],
                            callbacks=[lgb.log_evaluation(20)])
        pred = booster.predict(Xv_k)
        imp = booster.feature_importance("gain").astype(np.float32)
        booster.save_model(os.path.join(args.out, f"booster_r{r}_rank{rank}.txt"))
    if args.round_sleep:
        time.sleep(args.round_sleep)
    pt = torch.from_numpy(np.asarray(pred, dtype=np.float32))
    dist.all_reduce(pt)
    pt /= world
    it = torch.from_numpy(imp)
    dist.all_reduce(it)
    if rank == 0:
        from sklearn.metrics import roc_auc_score
        auc = roc_auc_score(yv, pt.numpy())
        top = np.argsort(-it.numpy())[:3]
        log.info("round %d ensemble val auc=%.4f top features=%s (%.1fs)", r, auc, top.tolist(), time.time() - t0)
dist.barrier()
if rank == 0:
    log.info("bagging finished: %d rounds x %d ranks", args.rounds, world)
dist.destroy_process_group()
