"""scikit-learn pipeline + GridSearchCV with joblib workers; --fault selects the failure."""
import argparse, logging, os, sys, time, warnings
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--n-jobs", type=int, default=2)
p.add_argument("--rows", type=int, default=3000)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(process)d] %(levelname)s %(message)s")
log = logging.getLogger("sk")
import numpy as np
from sklearn.datasets import make_classification
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler, PolynomialFeatures
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, cross_val_score
from joblib import Parallel, delayed

X, y = make_classification(n_samples=a.rows, n_features=40, n_informative=12, random_state=0)
log.info("data X=%s y=%s n_jobs=%d", X.shape, y.shape, a.n_jobs)

def slow_scorer(est, Xv, yv):
    time.sleep(0.3)
    return est.score(Xv, yv)

if a.fault == "pickle_local":
    def make_fold_task(Xf, yf):
        def fit_fold(train, test):
            m = LogisticRegression(max_iter=200).fit(Xf[train], yf[train])
            return m.score(Xf[test], yf[test])
        return fit_fold
    from sklearn.model_selection import KFold
    task = make_fold_task(X, y)
    log.info("running 5 folds with the multiprocessing backend")
    scores = Parallel(n_jobs=a.n_jobs, backend="multiprocessing", verbose=5)(
        delayed(task)(tr, te) for tr, te in KFold(5).split(X))
    log.info("fold scores %s", scores); sys.exit(0)

steps = [("scale", StandardScaler())]
if a.fault == "poly_oom":
    steps.append(("poly", PolynomialFeatures(degree=4)))
steps.append(("clf", LogisticRegression(max_iter=4 if a.fault in ("none", "kill_worker") else 200)))
pipe = Pipeline(steps)
grid = {"clf__C": [0.01, 0.1, 1.0, 10.0], "clf__class_weight": [None, "balanced"]}
gs = GridSearchCV(pipe, grid, cv=5, n_jobs=a.n_jobs, verbose=2, scoring=slow_scorer if a.fault == "kill_worker" else None)
t0 = time.time()
gs.fit(X, y)
log.info("best params %s score %.4f (%.1fs)", gs.best_params_, gs.best_score_, time.time() - t0)
