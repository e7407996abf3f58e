"""scikit-learn Pipeline + GridSearchCV; the grid selects which fits fail."""
import argparse, logging
p = argparse.ArgumentParser()
p.add_argument("--grid", default="ok", choices=["ok", "partial", "toolarge"])
p.add_argument("--jobs", type=int, default=1)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("grid")
import numpy as np
from sklearn.datasets import make_classification
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV

X, y = make_classification(n_samples=600, n_features=20, n_informative=8, random_state=0)
pipe = Pipeline([("scale", StandardScaler()), ("pca", PCA(svd_solver="full")), ("clf", LogisticRegression(max_iter=200))])
comps = {"ok": [5, 10, 15], "partial": [5, 10, 32], "toolarge": [24, 32]}[a.grid]
grid = {"pca__n_components": comps, "clf__C": [0.1, 1.0]}
log.info("grid %s, %d candidates x 5 folds", grid, len(comps) * 2)
gs = GridSearchCV(pipe, grid, cv=5, n_jobs=a.jobs, verbose=1, scoring="roc_auc")
gs.fit(X, y)
log.info("best %s score=%.4f", gs.best_params_, gs.best_score_)
for params, s in zip(gs.cv_results_["params"], gs.cv_results_["mean_test_score"]):
    log.info("  %s -> %s", params, s)
