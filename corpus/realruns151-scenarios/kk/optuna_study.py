import argparse, logging, sys, warnings
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--storage", default=None)
p.add_argument("--trials", type=int, default=8)
a = p.parse_args()
import numpy as np, optuna
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression, SGDClassifier
from sklearn.model_selection import cross_val_score
X, y = make_classification(n_samples=300, n_features=20, random_state=0)
def objective(trial):
    C = trial.suggest_float("C", 1e-3, 1e3, log=True)
    it = trial.suggest_int("max_iter", 5, 50)
    clf = LogisticRegression(C=C, max_iter=it)
    s = cross_val_score(clf, X * 50, y, cv=3).mean()
    if a.fault == "nan-trials" and C > 100:
        return float("nan")  # metric helper divides by an empty fold count for big C
    return s
study = optuna.create_study(study_name="logreg-tune", storage=a.storage, direction="maximize", load_if_exists=True,
                            sampler=optuna.samplers.TPESampler(seed=1))
study.optimize(objective, n_trials=a.trials)
print("best", study.best_value, study.best_params)
