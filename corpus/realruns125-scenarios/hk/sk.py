"""scikit-learn model-selection jobs (GridSearchCV / cross_val_score with joblib workers)."""
import argparse, os, sys, time, logging, warnings
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--job", required=True)
p.add_argument("--n-jobs", type=int, default=2)
p.add_argument("--rows", type=int, default=3000)
p.add_argument("--use-logging", action="store_true")
args = p.parse_args()
if args.use_logging:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("sk")
def out(m): (log.info(m) if args.use_logging else print(m, flush=True))

from sklearn.datasets import make_classification
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler, PolynomialFeatures, FunctionTransformer
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.neural_network import MLPClassifier
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.ensemble import RandomForestClassifier

X, y = make_classification(n_samples=args.rows, n_features=30, n_informative=8, n_redundant=10,
                           n_classes=3, random_state=0)
out(f"data X={X.shape} classes={np.bincount(y).tolist()} n_jobs={args.n_jobs}")

if args.job == "grid-healthy":
    # unscaled polynomial features + tiny max_iter: lots of ConvergenceWarnings, result still fine
    pipe = Pipeline([("poly", PolynomialFeatures(2)), ("clf", LogisticRegression(max_iter=60))])
    grid = {"clf__C": [0.01, 0.1, 1.0, 10.0], "clf__solver": ["lbfgs", "saga"]}
    gs = GridSearchCV(pipe, grid, cv=3, n_jobs=args.n_jobs, verbose=2)
    gs.fit(X, y)
    out(f"best params {gs.best_params_} best cv acc {gs.best_score_:.4f}")
    mlp = MLPClassifier(hidden_layer_sizes=(32,), max_iter=15, random_state=0)
    s = cross_val_score(mlp, X, y, cv=3, n_jobs=args.n_jobs)
    out(f"mlp cv acc {s.mean():.4f} +- {s.std():.4f}")
    out("model selection finished OK")

elif args.job == "rf-grid-long":
    rf = RandomForestClassifier(random_state=0, n_jobs=1)
    grid = {"n_estimators": [200, 400], "max_depth": [None, 12, 24], "max_features": ["sqrt", 0.5]}
    gs = GridSearchCV(rf, grid, cv=5, n_jobs=args.n_jobs, verbose=3)
    gs.fit(X, y)
    out(f"best params {gs.best_params_} best cv acc {gs.best_score_:.4f}")

elif args.job == "lambda-mp":
    from joblib import parallel_backend
    # clip outliers with an inline lambda; the cluster config forces the multiprocessing backend
    pipe = Pipeline([("clip", FunctionTransformer(lambda Z: np.clip(Z, -3, 3))),
                     ("scale", StandardScaler()), ("clf", LogisticRegression(max_iter=500))])
    with parallel_backend(os.environ.get("JOBLIB_BACKEND", "multiprocessing"), n_jobs=args.n_jobs):
        gs = GridSearchCV(pipe, {"clf__C": [0.1, 1.0, 10.0]}, cv=3, verbose=1)
        gs.fit(X, y)
    out(f"best {gs.best_params_}")
else:
    sys.exit("unknown job")
