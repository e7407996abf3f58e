"""scikit-learn pipelines. --mode healthy_noisy | stratify_singleton | nan_features"""
import argparse, logging, warnings, sys
import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.neural_network import MLPClassifier
from sklearn.model_selection import train_test_split, cross_val_score
from sklearn.preprocessing import StandardScaler
from sklearn.pipeline import make_pipeline

p = argparse.ArgumentParser(); p.add_argument("--mode", default="healthy_noisy"); a = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", stream=sys.stdout)
log = logging.getLogger("sk")
rng = np.random.default_rng(0)
X = rng.normal(size=(300, 12)); y = (X[:, 0] + 0.5 * X[:, 1] > 0).astype(int)
if a.mode == "stratify_singleton":
    # labels come from a CSV column with a rare class that only appears once
    y = y.copy(); y[17] = 2
if a.mode == "nan_features":
    # a feature derived by log-ratio; zeros in the denominator column produce NaN
    with np.errstate(all="ignore"):
        X[:, 5] = np.log(np.abs(X[:, 3]) / np.where(np.arange(300) % 37 == 0, 0.0, np.abs(X[:, 4]))) * 0
log.info("data: X=%s classes=%s", X.shape, np.unique(y).tolist())
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, stratify=y, random_state=0)
for it in (5, 10, 20, 400):
    clf = make_pipeline(StandardScaler(), MLPClassifier(hidden_layer_sizes=(32,), max_iter=it, random_state=0))
    clf.fit(Xtr, ytr)
    log.info("MLP max_iter=%d test acc %.3f", it, clf.score(Xte, yte))
lr = LogisticRegression(max_iter=3, solver="lbfgs")
scores = cross_val_score(lr, Xtr, ytr, cv=3)
log.info("logreg cv acc %s", np.round(scores, 3).tolist())
log.info("done")
