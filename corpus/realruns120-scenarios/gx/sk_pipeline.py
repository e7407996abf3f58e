"""scikit-learn tabular pipeline: load CSV, fit, cross-validate, save with joblib.

Flags select the fault:
  --fault none|nan|missing|feat|oom|corrupt|perm|killworker|converge
"""
import argparse
import logging
import os
import sys
import time
import warnings

import numpy as np
import pandas as pd
import joblib
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.linear_model import LogisticRegression
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import cross_val_score, GridSearchCV, train_test_split
from sklearn.metrics import accuracy_score, pairwise_distances

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data-csv", default="data/train.csv")
p.add_argument("--out-dir", default="out/sk")
p.add_argument("--rows", type=int, default=2000)
p.add_argument("--jobs", type=int, default=1)
p.add_argument("--use-logging", action="store_true")
args = p.parse_args()

if args.use_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("train_tabular")
def say(msg):
    if args.use_logging:
        log.info(msg)
    else:
        print(msg, flush=True)


def make_csv(path, rows, with_nan=False):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, 12))
    y = (X[:, 0] + 0.5 * X[:, 3] - X[:, 7] + rng.normal(scale=0.5, size=rows) > 0).astype(int)
    df = pd.DataFrame(X, columns=[f"f{i}" for i in range(12)])
    df["label"] = y
    if with_nan:
        # upstream join left holes in a sensor column
        idx = rng.choice(rows, size=rows // 50, replace=False)
        df.loc[idx, "f5"] = np.nan
    os.makedirs(os.path.dirname(path), exist_ok=True)
    df.to_csv(path, index=False)


if args.fault != "missing":
    make_csv(args.data_csv, args.rows, with_nan=(args.fault == "nan"))

say(f"loading {args.data_csv}")
df = pd.read_csv(args.data_csv)
say(f"loaded {len(df)} rows x {df.shape[1]} cols")
feature_cols = [c for c in df.columns if c != "label"]
X = df[feature_cols].to_numpy()
y = df["label"].to_numpy()
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)

if args.fault == "converge":
    # unscaled, huge features + tiny max_iter: lbfgs warns but finishes
    Xtr = Xtr * 1e4
    Xte = Xte * 1e4
    pipe = Pipeline([("clf", LogisticRegression(max_iter=15, C=100.0))])
else:
    pipe = Pipeline([("scale", StandardScaler()), ("clf", LogisticRegression(max_iter=200))])

say("5-fold cross validation ...")
scores = cross_val_score(pipe, Xtr, ytr, cv=5, n_jobs=args.jobs)
say(f"cv accuracy: {scores.mean():.4f} +/- {scores.std():.4f}")

pipe.fit(Xtr, ytr)
say(f"holdout accuracy: {accuracy_score(yte, pipe.predict(Xte)):.4f}")

if args.fault in ("killworker",):
    say("grid search over random forest (n_jobs=%d)" % args.jobs)
    grid = GridSearchCV(RandomForestClassifier(random_state=0),
                        {"n_estimators": [200, 400], "max_depth": [None, 8, 16]},
                        cv=3, n_jobs=args.jobs, verbose=2)
    grid.fit(Xtr, ytr)
    say(f"best params {grid.best_params_}")

if args.fault == "oom":
    # kNN-style novelty score on the full training set (float64 n x n distance matrix)
    say("computing pairwise distance matrix for outlier scores ...")
    big = np.tile(Xtr, (20, 1))
    D = pairwise_distances(big, big, n_jobs=1)
    say(f"distance matrix {D.shape}")

if args.fault == "feat":
    # scoring job reads the newer export, which dropped two deprecated columns
    new = df.drop(columns=["f10", "f11", "label"])
    say(f"scoring {len(new)} rows from new export")
    preds = pipe.predict(new.to_numpy())
    say(f"positives: {preds.sum()}")

if args.fault == "rf":
    say("fitting final random forest (300 trees)")
    pipe = RandomForestClassifier(n_estimators=300, random_state=0, n_jobs=args.jobs).fit(Xtr, ytr)
    say(f"rf holdout accuracy: {accuracy_score(yte, pipe.predict(Xte)):.4f}")

os.makedirs(args.out_dir, exist_ok=True)
model_path = os.path.join(args.out_dir, "model.joblib")
if args.fault == "corrupt":
    # a previous save was interrupted: load what is on disk to warm-start
    say(f"warm start from {model_path}")
    pipe = joblib.load(model_path)
say(f"saving model to {model_path}")
joblib.dump(pipe, model_path)
say("done")
