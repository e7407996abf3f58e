"""Optuna study tuning a LightGBM / XGBoost regressor on synthetic tabular data.

--fault: none (healthy, noisy), dyn_space (search space depends on another param),
         xgb_labels (multi-class labels not in [0, num_class))
"""
import argparse
import warnings

import numpy as np
import optuna
from scipy.stats import spearmanr
from sklearn.datasets import make_regression
from sklearn.model_selection import train_test_split

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--trials", type=int, default=12)
p.add_argument("--lib", default="lightgbm")
args = p.parse_args()

X, y = make_regression(n_samples=600, n_features=12, n_informative=6, noise=8.0, random_state=0)
Xtr, Xva, ytr, yva = train_test_split(X, y, test_size=0.25, random_state=0)


def objective(trial):
    if args.lib == "lightgbm":
        import lightgbm as lgb
        booster = trial.suggest_categorical("boosting", ["gbdt", "dart"])
        params = dict(
            objective="regression",
            learning_rate=trial.suggest_float("learning_rate", 1e-3, 0.3, log=True),
            num_leaves=trial.suggest_int("num_leaves", 2, 64, log=True),
            min_child_samples=trial.suggest_int("min_child_samples", 5, 400, log=True),
            boosting_type=booster,
        )
        if args.fault == "dyn_space":
            # dart only makes sense with fewer rounds: choices depend on the boosting type
            rounds = [50, 100] if booster == "dart" else [100, 200, 400]
            n_rounds = trial.suggest_categorical("n_rounds", rounds)
        else:
            n_rounds = trial.suggest_int("n_rounds", 50, 300, step=50)
        model = lgb.LGBMRegressor(n_estimators=n_rounds, **params)
        model.fit(Xtr, ytr)
        pred = model.predict(Xva)
    rho = spearmanr(pred, yva).statistic
    return float(rho)


def main():
    optuna.logging.set_verbosity(optuna.logging.INFO)
    study = optuna.create_study(direction="maximize", sampler=optuna.samplers.TPESampler(seed=3),
                                study_name="lgb-rank")
    study.optimize(objective, n_trials=args.trials)
    print("best trial:", study.best_trial.number, "spearman:", round(study.best_value, 4))
    print("best params:", study.best_params)


if __name__ == "__main__":
    main()
