"""Gradient-boosting CV: each torch.distributed rank trains one fold, scores are all-reduced (gloo).

--lib xgb|lgb|cat  --fault none|multiclass|nanlabel|resume|memlimit  --fault-rank R
Runs under torchrun (RANK/WORLD_SIZE set) or as a single plain process.
"""
import argparse, os, sys, time, logging
from datetime import timedelta

p = argparse.ArgumentParser()
p.add_argument("--lib", default="xgb")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=0)
p.add_argument("--rounds", type=int, default=60)
p.add_argument("--rows", type=int, default=6000)
p.add_argument("--resume-from", default=None)
args = p.parse_args()

import numpy as np
import torch
import torch.distributed as dist

rank = int(os.environ.get("RANK", 0))
world = int(os.environ.get("WORLD_SIZE", 1))
logging.basicConfig(level=logging.INFO, format=f"%(asctime)s rank{rank} %(levelname)s %(message)s")
log = logging.getLogger("cv")
if world > 1:
    dist.init_process_group("gloo", timeout=timedelta(seconds=60))
log.info("fold %d/%d lib=%s fault=%s", rank, world, args.lib, args.fault)

rng = np.random.default_rng(42)
N, D = args.rows, 24
X = rng.normal(size=(N, D)).astype(np.float32)
logit = X[:, :4].sum(1) + 0.5 * X[:, 4] * X[:, 5]
y = (logit + rng.normal(size=N) > 0).astype(np.float32)
y_multi = np.digitize(logit, [-1.5, 0, 1.5]).astype(np.float32)
folds = np.arange(N) % max(world, 2)
tr, va = folds != rank, folds == rank
Xtr, ytr, Xva, yva = X[tr], y[tr], X[va], y[va]

if args.fault == "nanlabel" and rank == args.fault_rank:
    # this fold's shard came from the export with unparsable targets ("n/a" -> NaN)
    raw = ytr.astype(object)
    raw[::97] = "n/a"
    ytr = np.array([float(v) if v != "n/a" else np.nan for v in raw], dtype=np.float32)
    log.info("loaded targets: %d rows, mean=%.3f", len(ytr), np.nanmean(ytr))

if args.fault == "memlimit" and rank == args.fault_rank:
    import resource
    lim = 1200 * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (lim, lim))   # per-job memory cap of this host slot
    log.info("address-space limit on this slot: %d MiB", lim >> 20)

score = float("nan")
if args.lib == "xgb":
    import xgboost as xgb
    dtr = xgb.DMatrix(Xtr, label=ytr)
    dva = xgb.DMatrix(Xva, label=yva)
    params = {"objective": "binary:logistic", "eval_metric": ["logloss", "auc"], "max_depth": 5,
              "eta": 0.1, "nthread": 1}
    init = None
    if args.resume_from:
        init = xgb.Booster()
        init.load_model(args.resume_from)
        log.info("resumed from %s at round %d", args.resume_from, init.num_boosted_rounds())
    bst = xgb.train(params, dtr, args.rounds, evals=[(dtr, "train"), (dva, "valid")],
                    early_stopping_rounds=10, verbose_eval=10, xgb_model=init)
    score = float(bst.eval(dva).split("valid-auc:")[1])
    bst.save_model(f"xgb_fold{rank}.json")
elif args.lib == "lgb":
    import lightgbm as lgb
    params = {"objective": "binary", "metric": ["binary_logloss", "auc"], "num_leaves": 63,
              "learning_rate": 0.1, "num_threads": 1, "min_data_in_leaf": 400,
              "verbose": 0}
    ytr_, yva_ = ytr, yva
    if args.fault == "multiclass":
        # switched to the 4-level target; objective updated, class count forgotten
        params.update(objective="multiclass", metric="multi_logloss")
        ytr_, yva_ = y_multi[tr], y_multi[va]
    dtr = lgb.Dataset(Xtr, label=ytr_)
    dva = lgb.Dataset(Xva, label=yva_, reference=dtr)
    bst = lgb.train(params, dtr, args.rounds, valid_sets=[dtr, dva], valid_names=["train", "valid"],
                    callbacks=[lgb.log_evaluation(10), lgb.early_stopping(10)])
    score = bst.best_score["valid"].get("auc", float("nan"))
    bst.save_model(f"lgb_fold{rank}.txt")
elif args.lib == "cat":
    from catboost import CatBoostClassifier
    Xtr_, Xva_ = Xtr, Xva
    if args.fault == "memlimit":
        # one-hot of the raw ids as extra dense features
        Xtr_ = np.concatenate([Xtr, rng.normal(size=(len(Xtr), 6000)).astype(np.float32)], 1)
        Xva_ = np.concatenate([Xva, rng.normal(size=(len(Xva), 6000)).astype(np.float32)], 1)
    clf = CatBoostClassifier(iterations=args.rounds, depth=6, learning_rate=0.1, thread_count=1,
                             eval_metric="AUC", od_type="Iter", od_wait=15, verbose=10,
                             train_dir=f"catboost_info_r{rank}")
    clf.fit(Xtr_, ytr, eval_set=(Xva_, yva))
    score = clf.get_best_score()["validation"]["AUC"]

log.info("fold %d valid auc %.4f", rank, score)
if world > 1:
    t = torch.tensor([score])
    dist.all_reduce(t)
    log.info("mean CV auc over %d folds: %.4f", world, t.item() / world)
    dist.destroy_process_group()
