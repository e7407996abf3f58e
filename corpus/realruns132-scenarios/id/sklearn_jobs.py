"""scikit-learn pipelines; --fault selects failure."""
import argparse, logging, os, sys, threading, time
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "nan", "killworker", "kernel_alloc", "badparam"])
p.add_argument("--n-jobs", type=int, default=2)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(levelname)s] %(message)s")
log = logging.getLogger("sk")
import numpy as np, pandas as pd
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.ensemble import RandomForestClassifier
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.preprocessing import StandardScaler, PolynomialFeatures
from sklearn.pipeline import make_pipeline
from sklearn.svm import SVC
import sklearn
log.info("scikit-learn %s, numpy %s", sklearn.__version__, np.__version__)
X, y = make_classification(n_samples=3000, n_features=30, n_informative=10, random_state=0)
df = pd.DataFrame(X, columns=[f"f{i}" for i in range(30)]); df["y"] = y
if a.fault == "nan":
    # left join against a lookup table with missing keys
    lookup = pd.DataFrame({"key": np.arange(0, 2800), "ratio": np.random.default_rng(1).random(2800)})
    df["key"] = np.arange(3000)
    df = df.merge(lookup, on="key", how="left").drop(columns="key")
feats = [c for c in df.columns if c != "y"]
log.info("loaded %d rows, %d features", len(df), len(feats))
if a.fault == "none":
    # unscaled poly features, low max_iter: many convergence warnings but the run finishes
    pipe = make_pipeline(PolynomialFeatures(2), LogisticRegression(max_iter=30, C=10.0))
    scores = cross_val_score(pipe, df[feats].values * 50, df["y"].values, cv=4, n_jobs=1)
    log.info("cv accuracy %.4f +- %.4f", scores.mean(), scores.std())
elif a.fault == "nan":
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=500))
    scores = cross_val_score(pipe, df[feats], df["y"], cv=5, error_score="raise")
    log.info("cv accuracy %.4f", scores.mean())
elif a.fault == "killworker":
    grid = GridSearchCV(RandomForestClassifier(random_state=0), {"n_estimators": [50, 100, 200], "max_depth": [4, 8, None]},
                        cv=3, n_jobs=a.n_jobs, verbose=2)
    grid.fit(df[feats].values, df["y"].values)
    log.info("best %s %.4f", grid.best_params_, grid.best_score_)
elif a.fault == "kernel_alloc":
    Xa = np.repeat(df[feats].values, 12, axis=0)  # oversampled training set
    ya = np.repeat(df["y"].values, 12)
    log.info("oversampled to %d rows; precomputing RBF kernel", len(Xa))
    from sklearn.metrics.pairwise import rbf_kernel
    K = rbf_kernel(Xa, Xa)
    clf = SVC(kernel="precomputed").fit(K, ya)
elif a.fault == "badparam":
    clf = LogisticRegression(penalty="l1", solver="lbfgs", max_iter=200)
    clf.fit(df[feats].values, df["y"].values)
log.info("done")
