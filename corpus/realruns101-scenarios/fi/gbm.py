"""Gradient boosting on a synthetic churn table (XGBoost / LightGBM / CatBoost).

--lib xgb|lgb|cat  --fault none | nan-label | big-bins | cat-nan
"""
import argparse
import logging
import os
import sys
import time

import numpy as np
import pandas as pd


def make_table(n, seed=0, n_feat=20):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, n_feat)).astype(np.float32)
    logit = X[:, 0] * 1.5 - X[:, 1] + 0.5 * X[:, 2] * X[:, 3]
    y = (logit + rng.normal(scale=0.5, size=n) > 0).astype(np.float64)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(n_feat)])
    df["plan"] = rng.choice(["basic", "pro", "team"], size=n)
    df["tenure_days"] = rng.integers(0, 2000, size=n)
    df["churned"] = y
    return df


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--lib", default="xgb")
    p.add_argument("--fault", default="none")
    p.add_argument("--rows", type=int, default=20000)
    p.add_argument("--threads", type=int, default=2)
    args = p.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s - %(message)s")
    log = logging.getLogger("gbm")

    df = make_table(args.rows)
    if args.fault in ("nan-label", "cat-nan"):
        # labels joined from the billing export: customers missing from the export get NaN
        billing = df[["tenure_days"]].copy()
        billing["churned_billing"] = df["churned"]
        billing.loc[billing.sample(frac=0.03, random_state=1).index, "churned_billing"] = np.nan
        df["churned"] = billing["churned_billing"]
        if args.fault == "cat-nan":
            df.loc[df.sample(frac=0.01, random_state=2).index, "plan"] = np.nan
            df["churned"] = df["churned"].fillna(0)
    log.info("loaded table rows=%d cols=%d positive_rate=%.3f", len(df), df.shape[1], df["churned"].mean())
    feats = [c for c in df.columns if c != "churned"]
    tr = df.iloc[: int(0.8 * len(df))]
    va = df.iloc[int(0.8 * len(df)):]

    t0 = time.time()
    if args.lib == "xgb":
        import xgboost as xgb
        Xtr = tr[feats].copy(); Xva = va[feats].copy()
        Xtr["plan"] = Xtr["plan"].astype("category"); Xva["plan"] = Xva["plan"].astype("category")
        params = dict(n_estimators=400, max_depth=6, learning_rate=0.1, n_jobs=args.threads,
                      early_stopping_rounds=20, eval_metric="logloss", enable_categorical=True,
                      tree_method="hist", use_label_encoder=False, gpu_id=0 if args.fault == "legacy-params" else None,
                      verbosity=1)
        params = {k: v for k, v in params.items() if v is not None}
        clf = xgb.XGBClassifier(**params)
        clf.fit(Xtr, tr["churned"], eval_set=[(Xtr, tr["churned"]), (Xva, va["churned"])], verbose=25)
        log.info("best_iteration=%s best_score=%.4f", clf.best_iteration, clf.best_score)
        clf.save_model("runs/gbm/xgb_churn.json")
    elif args.lib == "lgb":
        import lightgbm as lgb
        Xtr = tr[feats].copy(); Xva = va[feats].copy()
        Xtr["plan"] = Xtr["plan"].astype("category"); Xva["plan"] = Xva["plan"].astype("category")
        params = dict(objective="binary", learning_rate=0.05, num_leaves=63, min_data_in_leaf=5000,
                      num_threads=args.threads, verbose=1, metric="auc")
        if args.fault == "big-bins":
            params.update(max_bin=2_000_000, min_data_in_bin=1, max_bin_by_feature=None)
            params = {k: v for k, v in params.items() if v is not None}
        dtr = lgb.Dataset(Xtr, tr["churned"])
        dva = lgb.Dataset(Xva, va["churned"], reference=dtr)
        booster = lgb.train(params, dtr, num_boost_round=300, valid_sets=[dtr, dva], valid_names=["train", "valid"],
                            callbacks=[lgb.early_stopping(25), lgb.log_evaluation(25)])
        log.info("best_iteration=%d", booster.best_iteration)
        booster.save_model("runs/gbm/lgb_churn.txt")
    elif args.lib == "cat":
        from catboost import CatBoostClassifier
        clf = CatBoostClassifier(iterations=300, depth=6, learning_rate=0.1, thread_count=args.threads,
                                 train_dir="runs/gbm/catboost_info", verbose=50, early_stopping_rounds=30)
        clf.fit(tr[feats], tr["churned"], cat_features=["plan"], eval_set=(va[feats], va["churned"]))
        log.info("best_iteration=%s", clf.get_best_iteration())
        clf.save_model("runs/gbm/cat_churn.cbm")
    log.info("training took %.1fs", time.time() - t0)


if __name__ == "__main__":
    main()
