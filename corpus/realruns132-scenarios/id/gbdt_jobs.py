"""XGBoost / LightGBM / CatBoost tiny jobs; --lib and --fault select."""
import argparse, logging, os, sys
p = argparse.ArgumentParser()
p.add_argument("--lib", choices=["xgb", "lgb", "cat"], required=True)
p.add_argument("--fault", default="none")
p.add_argument("--train-dir", default="/tmp/rr132id_catboost_info")
a = p.parse_args()
import numpy as np, pandas as pd
from sklearn.datasets import make_classification
X, y = make_classification(n_samples=4000, n_features=12, n_informative=6, random_state=0)
Xtr, Xva, ytr, yva = X[:3200], X[3200:], y[:3200], y[3200:]
if a.lib == "xgb":
    import xgboost as xgb
    print("xgboost", xgb.__version__, flush=True)
    params = {"objective": "binary:logistic", "eval_metric": "logloss", "max_depth": 4, "eta": 0.1}
    if a.fault == "gpu":          # config copied from the GPU cluster
        params.update(device="cuda", tree_method="hist")
    if a.fault == "label":        # relabelled dataset: 3 grades instead of pass/fail
        ytr = ytr + (X[:3200, 0] > 1)
    dtr = xgb.DMatrix(Xtr, label=ytr); dva = xgb.DMatrix(Xva, label=yva)
    bst = xgb.train(params, dtr, 60, evals=[(dtr, "train"), (dva, "valid")], verbose_eval=10)
    if a.fault == "featmismatch":
        bst.predict(xgb.DMatrix(Xva[:, :10]))
    print("done, best iteration", bst.best_iteration if hasattr(bst, "best_iteration") else "-")
elif a.lib == "lgb":
    import lightgbm as lgb
    print("lightgbm", lgb.__version__, flush=True)
    params = {"objective": "binary", "num_leaves": 63, "min_data_in_leaf": 5, "learning_rate": 0.1, "verbose": 1}
    if a.fault == "none":   # small pilot sample, big trees: LightGBM runs out of useful splits
        params.update(num_leaves=63, min_data_in_leaf=40)
        Xtr, ytr = Xtr[:300], ytr[:300]
    dtr = lgb.Dataset(Xtr, ytr)
    if a.fault == "binfile":   # cached binary dataset from yesterday's preprocessing job
        dtr = lgb.Dataset("/tmp/rr132id_cache/train_v3.bin")
    if a.fault == "valshape":   # validation file built by an older export with 2 fewer columns
        dva = lgb.Dataset(Xva[:, :10], yva, reference=dtr)
    else:
        dva = lgb.Dataset(Xva, yva, reference=dtr)
    bst = lgb.train(params, dtr, 80, valid_sets=[dtr, dva], valid_names=["train", "valid"],
                    callbacks=[lgb.log_evaluation(10)])
    print("done, trees:", bst.num_trees())
elif a.lib == "cat":
    from catboost import CatBoostClassifier, Pool
    import catboost
    print("catboost", catboost.__version__, flush=True)
    df = pd.DataFrame(Xtr, columns=[f"f{i}" for i in range(12)])
    df["city"] = np.random.default_rng(0).choice(["a", "b", "c"], len(df))
    cat_features = ["city"]
    if a.fault == "catfloat":
        cat_features = ["city", "f3"]   # f3 was a categorical in the old schema
    m = CatBoostClassifier(iterations=100, depth=4, verbose=20, train_dir=a.train_dir, thread_count=1)
    m.fit(df, ytr, cat_features=cat_features)
    print("done", m.get_best_iteration())
