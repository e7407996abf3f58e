import argparse, os, sys, logging, warnings
p = argparse.ArgumentParser()
p.add_argument("--lib", default="xgboost")
p.add_argument("--fault", default="none")
p.add_argument("--data", default="data/train.csv")
p.add_argument("--out", default="out")
p.add_argument("--rounds", type=int, default=30)
a = p.parse_args()
import numpy as np
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s")
log = logging.getLogger("gbm")
rng = np.random.default_rng(0)
if a.fault == "missing-data" or a.data != "data/train.csv":
    import pandas as pd
    log.info("reading %s", a.data)
    df = pd.read_csv(a.data)
    X, y = df.drop(columns="label").values, df["label"].values
else:
    X = rng.normal(size=(600 if a.fault != "big" else 3_000_000, 10)); y = (X[:, 0] + X[:, 1] > 0).astype(int) + (X[:, 2] > 1).astype(int)
    if a.fault == "label-shift":
        y = y + 1   # labels exported 1-based by the upstream job
    if a.fault == "tiny":
        X = X[:40]; y = y[:40]; X[:, 5:] = 0.0
n = int(len(X) * 0.8)
Xtr, ytr, Xva, yva = X[:n], y[:n], X[n:], y[n:]
os.makedirs(a.out, exist_ok=True)
if a.lib == "xgboost":
    import xgboost as xgb
    dtr = xgb.DMatrix(Xtr, label=ytr); dva = xgb.DMatrix(Xva, label=yva)
    params = {"objective": "multi:softprob", "num_class": 3, "max_depth": 3, "eta": 0.3, "eval_metric": "mlogloss", "nthread": 1}
    if a.fault == "gpu-param":
        params["gpu_id"] = 0; params["tree_method"] = "gpu_hist"; params["predictor"] = "gpu_predictor"
    bst = xgb.train(params, dtr, a.rounds, evals=[(dtr, "train"), (dva, "valid")], verbose_eval=5)
    bst.save_model(os.path.join(a.out, "model.json"))
elif a.lib == "lightgbm":
    import lightgbm as lgb
    params = {"objective": "multiclass", "num_class": 3, "num_leaves": 15, "learning_rate": 0.1, "num_threads": 1, "verbose": 1}
    if a.fault == "tiny":
        params.update(min_data_in_leaf=30)
    dtr = lgb.Dataset(Xtr, ytr); dva = lgb.Dataset(Xva, yva, reference=dtr)
    bst = lgb.train(params, dtr, a.rounds, valid_sets=[dva], callbacks=[lgb.log_evaluation(5)])
    bst.save_model(os.path.join(a.out, "model.txt"))
elif a.lib == "catboost":
    from catboost import CatBoostClassifier
    m = CatBoostClassifier(iterations=a.rounds, depth=4, verbose=10, thread_count=1, train_dir=os.path.join(a.out, "catboost_info"), loss_function="MultiClass")
    cat = [0, 3] if a.fault == "cat-float" else None  # columns 0 and 3 were categorical codes in the old export
    m.fit(Xtr, ytr, eval_set=(Xva, yva), cat_features=cat)
    m.save_model(os.path.join(a.out, "model.cbm"))
log.info("saved model to %s", a.out)
