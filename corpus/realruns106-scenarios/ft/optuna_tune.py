"""Hyper-parameter search with Optuna over scikit-learn / CatBoost models (single process).

--model logreg|catboost
--fault none      healthy; some sampled combinations are invalid for the solver, their CV folds
                  fail (error_score=nan) and Optuna marks those trials failed, the study still finishes
--fault typo      objective reads a hyper-parameter under a misspelled key
--fault catfloat  a float column is listed in cat_features
--resume PATH     start CatBoost from a previously saved model (init_model)
--train-dir DIR   CatBoost train_dir
"""
import argparse
import logging
import sys
import warnings

import numpy as np
import optuna

p = argparse.ArgumentParser()
p.add_argument("--model", default="logreg")
p.add_argument("--fault", default="none")
p.add_argument("--trials", type=int, default=12)
p.add_argument("--resume", default=None)
p.add_argument("--catch", action="store_true", help="keep going when a trial raises ValueError")
p.add_argument("--train-dir", default="out/catboost_info")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                    stream=sys.stdout)
log = logging.getLogger("tune")

rng = np.random.default_rng(3)
n = 3000
X = rng.normal(size=(n, 6))
X[:, 2] = rng.uniform(size=n)                     # discount ratio (float)
X[:, 4] = rng.integers(0, 12, size=n)             # store id
X[:, 5] = rng.integers(0, 4, size=n)              # weekday bucket
y = ((X[:, 0] + 0.5 * X[:, 1] - X[:, 2] + 0.2 * (X[:, 4] % 3) + rng.normal(scale=0.7, size=n)) > 0).astype(int)
log.info("dataset: %d rows x %d features, positive rate %.3f", n, X.shape[1], y.mean())


def objective_logreg(trial):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import cross_val_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    params = {
        "C": trial.suggest_float("C", 1e-3, 1e2, log=True),
        "penalty": trial.suggest_categorical("penalty", ["l2", "l1", "elasticnet"]),
        "solver": trial.suggest_categorical("solver", ["lbfgs", "saga", "liblinear"]),
        "max_iter": trial.suggest_int("max_iter", 5, 50),
    }
    if args.fault == "typo":
        params["C"] = trial.params["c"]
    l1_ratio = 0.5 if params["penalty"] == "elasticnet" else None
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=params["C"], penalty=params["penalty"],
                        solver=params["solver"], max_iter=params["max_iter"], l1_ratio=l1_ratio))
    scores = cross_val_score(clf, X, y, cv=3, scoring="roc_auc", error_score=np.nan)
    return float(np.mean(scores))


def objective_catboost(trial):
    from catboost import CatBoostClassifier, Pool
    from sklearn.metrics import roc_auc_score
    params = {
        "depth": trial.suggest_int("depth", 3, 6),
        "learning_rate": trial.suggest_float("learning_rate", 0.02, 0.3, log=True),
        "l2_leaf_reg": trial.suggest_float("l2_leaf_reg", 1.0, 10.0),
        "iterations": 120,
    }
    cat_idx = [4, 5] if args.fault != "catfloat" else [2, 4, 5]
    Xd = X.astype(object)
    for c in (4, 5):
        Xd[:, c] = X[:, c].astype(int)
    tr, va = slice(0, 2400), slice(2400, None)
    model = CatBoostClassifier(**params, thread_count=1, verbose=40, random_seed=trial.number,
                               train_dir=args.train_dir)
    model.fit(Pool(Xd[tr], y[tr], cat_features=cat_idx), eval_set=Pool(Xd[va], y[va], cat_features=cat_idx),
              init_model=args.resume)
    return roc_auc_score(y[va], model.predict_proba(Xd[va])[:, 1])


objective = objective_logreg if args.model == "logreg" else objective_catboost
study = optuna.create_study(direction="maximize", study_name=f"{args.model}-search",
                            sampler=optuna.samplers.TPESampler(seed=11))
study.optimize(objective, n_trials=args.trials, show_progress_bar=True,
               catch=(ValueError,) if args.catch else ())
done = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
log.info("%d/%d trials complete; best value %.4f with %s", len(done), len(study.trials),
         study.best_value, study.best_params)
