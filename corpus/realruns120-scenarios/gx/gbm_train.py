"""Gradient boosting training script: xgboost / lightgbm / catboost on a synthetic tabular task.

  --lib xgb|lgb|cat
  --fault none|labels|traindir|smallleaf|catfloat|fsize
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import pandas as pd

p = argparse.ArgumentParser()
p.add_argument("--lib", default="xgb")
p.add_argument("--fault", default="none")
p.add_argument("--rounds", type=int, default=60)
p.add_argument("--classes", type=int, default=3)
p.add_argument("--work-dir", default="out/gbm")
p.add_argument("--rows", type=int, default=3000)
args = p.parse_args()

rng = np.random.default_rng(42)
n = args.rows
X = rng.normal(size=(n, 10))
logits = np.stack([X[:, 0] + X[:, 1], X[:, 2] - X[:, 0], 0.5 * X[:, 3]], axis=1)
y = logits.argmax(1)  # 0,1,2
cols = [f"feat {i}" if args.fault == "smallleaf" else f"feat_{i}" for i in range(10)]
df = pd.DataFrame(X, columns=cols)
df["region"] = rng.choice(["north", "south", "east", "west"], size=n)
df["store_id"] = rng.integers(1, 50, size=n).astype(float)  # ids came through a float column

if args.fault == "labels":
    # labels taken from the raw export, which numbers classes 1..3
    y = y + 1

split = int(0.8 * n)
tr, va = df.iloc[:split], df.iloc[split:]
ytr, yva = y[:split], y[split:]
os.makedirs(args.work_dir, exist_ok=True)
print(f"[{args.lib}] train={len(tr)} valid={len(va)} features={tr.shape[1]} classes={args.classes}", flush=True)

if args.lib == "xgb":
    import xgboost as xgb
    trn = tr.copy(); van = va.copy()
    trn["region"] = trn["region"].astype("category"); van["region"] = van["region"].astype("category")
    dtr = xgb.DMatrix(trn, label=ytr, enable_categorical=True)
    dva = xgb.DMatrix(van, label=yva, enable_categorical=True)
    params = {"objective": "multi:softprob", "num_class": args.classes, "eta": 0.1,
              "max_depth": 6, "eval_metric": "mlogloss", "tree_method": "hist", "nthread": 2}
    bst = xgb.train(params, dtr, args.rounds, evals=[(dtr, "train"), (dva, "valid")],
                    verbose_eval=10, early_stopping_rounds=10)
    bst.save_model(os.path.join(args.work_dir, "model.ubj"))
    print("best iteration", bst.best_iteration)

elif args.lib == "lgb":
    import lightgbm as lgb
    trn = tr.copy(); van = va.copy()
    trn["region"] = trn["region"].astype("category"); van["region"] = van["region"].astype("category")
    params = {"objective": "multiclass", "num_class": args.classes, "learning_rate": 0.1,
              "num_leaves": 63, "num_threads": 2, "verbose": 1}
    if args.fault == "smallleaf":
        # tuned on the big dataset: far too large leaves for this sample
        params.update({"min_data_in_leaf": 400, "min_sum_hessian_in_leaf": 1.0, "num_leaves": 255})
    dtr = lgb.Dataset(trn, label=ytr)
    dva = lgb.Dataset(van, label=yva, reference=dtr)
    bst = lgb.train(params, dtr, num_boost_round=args.rounds, valid_sets=[dtr, dva],
                    valid_names=["train", "valid"],
                    callbacks=[lgb.log_evaluation(10), lgb.early_stopping(15)])
    path = os.path.join(args.work_dir, "model.txt")
    bst.save_model(path)
    hist_path = os.path.join(args.work_dir, "feature_importance.json")
    with open(hist_path, "w") as fh:
        json.dump(dict(zip(bst.feature_name(), bst.feature_importance().tolist())), fh)
    print(f"saved {path} ({os.path.getsize(path)} bytes), best_iteration={bst.best_iteration}")

elif args.lib == "cat":
    from catboost import CatBoostClassifier, Pool
    cat_features = ["region", "store_id"] if args.fault == "catfloat" else ["region"]
    ptr = Pool(tr, ytr, cat_features=cat_features)
    pva = Pool(va, yva, cat_features=cat_features)
    model = CatBoostClassifier(iterations=args.rounds, learning_rate=0.1, depth=6,
                               loss_function="MultiClass", thread_count=2,
                               train_dir=os.path.join(args.work_dir, "catboost_info"),
                               verbose=10)
    model.fit(ptr, eval_set=pva)
    model.save_model(os.path.join(args.work_dir, "model.cbm"))
    print("best iteration", model.get_best_iteration())

if args.fault == "fsize":
    # dump out-of-fold predictions for the stacking stage
    print("writing out-of-fold predictions ...", flush=True)
    big = pd.DataFrame(rng.normal(size=(200000, 12)))
    with open(os.path.join(args.work_dir, "oof_predictions.csv"), "w") as fh:
        big.to_csv(fh, index=False)
print("finished", flush=True)
