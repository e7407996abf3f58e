"""scikit-learn model selection and Optuna tuning on a synthetic dataset.

--task grid | optuna ; --fault none | sqlite-path
"""
import argparse
import logging
import os
import sys
import time
import warnings

import numpy as np
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.ensemble import RandomForestClassifier, HistGradientBoostingClassifier
from sklearn.model_selection import GridSearchCV, cross_val_score, StratifiedKFold
from sklearn.neural_network import MLPClassifier
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler, PolynomialFeatures


def data(n=6000, seed=0):
    return make_classification(n_samples=n, n_features=40, n_informative=12, n_redundant=10,
                               class_sep=0.7, flip_y=0.03, random_state=seed)


def grid(args):
    X, y = data(args.rows)
    pipe = Pipeline([("poly", PolynomialFeatures(degree=2)), ("scale", StandardScaler()),
                     ("clf", LogisticRegression(max_iter=60))])
    gs = GridSearchCV(pipe, {"clf__C": [0.01, 0.1, 1.0, 10.0], "poly__degree": [1, 2]},
                      cv=StratifiedKFold(4, shuffle=True, random_state=0), n_jobs=args.n_jobs, verbose=3)
    t0 = time.time()
    gs.fit(X, y)
    print(f"best params {gs.best_params_} cv acc {gs.best_score_:.4f} in {time.time()-t0:.1f}s", flush=True)


def optuna_study(args):
    import optuna
    X, y = data(3000)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    storage = None
    if args.fault == "sqlite-path":
        # path taken from the cluster config; the results/ dir only exists on the shared volume
        storage = "sqlite:///results/optuna/mlp_sweep.db"
    elif args.storage:
        storage = args.storage

    def objective(trial):
        hidden = trial.suggest_int("hidden", 8, 128, log=True)
        lr = trial.suggest_float("lr", 1e-4, 1.0, log=True)
        alpha = trial.suggest_float("alpha", 1e-6, 1e-1, log=True)
        clf = MLPClassifier(hidden_layer_sizes=(hidden,), learning_rate_init=lr, alpha=alpha,
                            max_iter=1, warm_start=True, random_state=trial.number)
        Xs = StandardScaler().fit_transform(X)
        Xtr, ytr, Xva, yva = Xs[:2400], y[:2400], Xs[2400:], y[2400:]
        for epoch in range(12):
            clf.fit(Xtr, ytr)
            acc = clf.score(Xva, yva)
            trial.report(acc, epoch)
            if trial.should_prune():
                raise optuna.TrialPruned()
        return acc

    sampler = optuna.samplers.TPESampler(seed=0, multivariate=True, group=True)
    study = optuna.create_study(study_name="mlp_sweep", direction="maximize", storage=storage,
                                sampler=sampler, pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=2),
                                load_if_exists=True)
    study.optimize(objective, n_trials=args.trials, n_jobs=1)
    pruned = [t for t in study.trials if t.state == optuna.trial.TrialState.PRUNED]
    print(f"finished {len(study.trials)} trials ({len(pruned)} pruned); best {study.best_value:.4f} {study.best_params}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--task", default="grid")
    p.add_argument("--fault", default="none")
    p.add_argument("--rows", type=int, default=6000)
    p.add_argument("--n-jobs", type=int, default=2)
    p.add_argument("--trials", type=int, default=20)
    p.add_argument("--storage", default=None)
    args = p.parse_args()
    if args.task == "grid":
        grid(args)
    else:
        optuna_study(args)


if __name__ == "__main__":
    main()
