"""scikit-learn pipeline + GridSearchCV.  --fault {none,l1grid,poly}"""
import argparse, sys, time, logging
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--n-jobs", type=int, default=2)
p.add_argument("--max-iter", type=int, default=30)
p.add_argument("--degree", type=int, default=2)
p.add_argument("--features", type=int, default=30)
a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
import numpy as np
from sklearn.datasets import make_classification
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler, PolynomialFeatures
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, train_test_split
from sklearn.metrics import classification_report
X, y = make_classification(n_samples=3000, n_features=a.features, n_informative=10, n_classes=3, random_state=0)
X[:, 3] *= 1e4   # unscaled column
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
steps = []
if a.fault == "poly":
    steps.append(("poly", PolynomialFeatures(degree=a.degree)))
steps += [("scale", StandardScaler()), ("clf", LogisticRegression(solver="lbfgs", max_iter=a.max_iter))]
pipe = Pipeline(steps)
grid = {"clf__C": [0.01, 0.1, 1.0, 10.0]}
if a.fault == "l1grid":
    grid["clf__l1_ratio"] = [0.5, 1.0]
search = GridSearchCV(pipe, grid, cv=3, n_jobs=a.n_jobs, verbose=2, scoring="f1_macro")
t = time.time()
search.fit(Xtr, ytr)
logging.info("search done in %.1fs best %s score %.4f", time.time() - t, search.best_params_, search.best_score_)
print(classification_report(yte, search.predict(Xte)))
