"""Churn model training with scikit-learn (single process).

Builds a synthetic customer table, filters it, fits a pipeline and saves it.
--fault selects a real bug / misconfiguration:
  none        healthy run (max_iter small -> ConvergenceWarning, sparse classes)
  nan         a merged column carries NaN (left join with missing rows), no imputer
  empty       region filter uses the wrong case ('eu' vs 'EU') -> empty frame
  inf         ratio feature divides by a zero tenure -> inf
  lfs         warm-start from a model file that is a git-lfs pointer
  bigmatrix   pairwise-kernel feature built with n_samples^2 floats (run under ulimit -v)
  save        output dir given on the command line (may be read-only)
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
from sklearn.linear_model import LogisticRegression
from sklearn.preprocessing import StandardScaler
from sklearn.pipeline import make_pipeline
from sklearn.model_selection import cross_val_score, train_test_split
from sklearn.metrics import roc_auc_score

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--n", type=int, default=4000)
p.add_argument("--out", default="out/churn")
p.add_argument("--init-model", default=None)
p.add_argument("--usage-shards", default=None, help="directory of per-day usage CSV exports")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("churn")
warnings.simplefilter("default")

rng = np.random.default_rng(7)
n = args.n
df = pd.DataFrame({
    "customer_id": np.arange(n),
    "region": rng.choice(["EU", "US", "APAC"], size=n),
    "tenure": rng.integers(0 if args.fault == "inf" else 1, 60, size=n).astype(float),
    "monthly": rng.gamma(2.0, 30.0, size=n),
    "support_calls": rng.poisson(1.5, size=n).astype(float),
})
df["total"] = 25.0 + df["tenure"] * df["monthly"] * rng.uniform(0.9, 1.1, size=n)  # incl. signup fee
usage = pd.DataFrame({"customer_id": np.arange(0, n, 1 if args.fault != "nan" else 1)})
usage["gb_used"] = rng.gamma(3.0, 10.0, size=len(usage))
if args.usage_shards:
    import glob
    files = sorted(glob.glob(os.path.join(args.usage_shards, "part-*.csv")))
    log.info("reading %d usage shards from %s", len(files), args.usage_shards)
    handles = [open(f) for f in files]          # streamed below, closed at exit
    parts = [pd.read_csv(h) for h in handles]
    usage = pd.concat(parts).groupby("customer_id", as_index=False)["gb_used"].sum()
if args.fault == "nan":
    # usage export from the warehouse is missing ~3% of customers
    usage = usage.sample(frac=0.97, random_state=1)
df = df.merge(usage, on="customer_id", how="left")
logit = -2.0 + 0.04 * df["support_calls"] * 10 - 0.03 * df["tenure"] + 0.01 * df["monthly"]
df["churn"] = (rng.uniform(size=n) < 1 / (1 + np.exp(-logit))).astype(int)
log.info("loaded %d customers, churn rate %.3f", len(df), df["churn"].mean())

region = "eu" if args.fault == "empty" else "EU"
df = df[df["region"] == region]
log.info("region=%s -> %d rows after filter", region, len(df))

df["spend_per_month"] = df["total"] / df["tenure"]
features = ["tenure", "monthly", "support_calls", "total", "gb_used", "spend_per_month"]
X = df[features].to_numpy()
y = df["churn"].to_numpy()

if args.fault == "bigmatrix":
    log.info("building RBF similarity features against all %d customers", len(X))
    d2 = ((X[:, None, :] - X[None, :, :]) ** 2).sum(-1)
    X = np.hstack([X, np.exp(-d2 / d2.mean())])

Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0) if len(X) else (X, X, y, y)
clf = make_pipeline(StandardScaler(), LogisticRegression(max_iter=15, C=50.0, warm_start=True))
if args.init_model:
    log.info("warm start from %s", args.init_model)
    clf = joblib.load(args.init_model)

t0 = time.time()
scores = cross_val_score(clf, Xtr, ytr, cv=3, scoring="roc_auc")
log.info("cv auc per fold: %s mean=%.4f", np.round(scores, 4), scores.mean())
clf.fit(Xtr, ytr)
auc = roc_auc_score(yte, clf.predict_proba(Xte)[:, 1])
log.info("holdout auc=%.4f fit_time=%.2fs", auc, time.time() - t0)

os.makedirs(args.out, exist_ok=True)
path = os.path.join(args.out, "churn_lr.joblib")
joblib.dump(clf, path)
log.info("saved model to %s", path)
