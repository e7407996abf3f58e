"""Optuna search over LightGBM params (single process). Failed trials are caught by the study."""
import argparse
import sys

import lightgbm as lgb
import numpy as np
import optuna
from loguru import logger
from sklearn.datasets import make_classification
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split

p = argparse.ArgumentParser()
p.add_argument("--trials", type=int, default=12)
p.add_argument("--color", action="store_true")
p.add_argument("--keep-raw", action="store_true", help="free_raw_data=False (needed to continue training)")
a = p.parse_args()

logger.remove()
logger.add(sys.stderr, colorize=a.color, level="DEBUG",
           format="<green>{time:HH:mm:ss.SSS}</green> | <level>{level: <8}</level> | {message}")

X, y = make_classification(n_samples=600, n_features=12, n_informative=4, random_state=0)
Xtr, Xva, ytr, yva = train_test_split(X, y, test_size=0.25, random_state=0)


def objective(trial):
    params = {
        "objective": "binary",
        "learning_rate": trial.suggest_float("learning_rate", 1e-3, 0.5, log=True),
        # the search space lower bound of 1 lets LightGBM receive an invalid value
        "num_leaves": trial.suggest_int("num_leaves", 1, 64),
        "min_data_in_leaf": trial.suggest_int("min_data_in_leaf", 5, 200),
        "verbose": 0,
    }
    dtr = lgb.Dataset(Xtr, ytr, free_raw_data=not a.keep_raw)
    dva = lgb.Dataset(Xva, yva, reference=dtr, free_raw_data=not a.keep_raw)
    booster = None
    for rnd in range(1, 6):
        booster = lgb.train(params, dtr, num_boost_round=10, init_model=booster, valid_sets=[dva],
                            keep_training_booster=True)
        loss = log_loss(yva, booster.predict(Xva))
        trial.report(loss, rnd)
        if trial.should_prune():
            logger.warning("trial {} pruned at round {} (val logloss {:.4f})", trial.number, rnd, loss)
            raise optuna.TrialPruned()
    logger.info("trial {} done: val logloss {:.4f}", trial.number, loss)
    return loss


study = optuna.create_study(direction="minimize", sampler=optuna.samplers.TPESampler(seed=3),
                            pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1))
study.enqueue_trial({"learning_rate": 0.1, "num_leaves": 1, "min_data_in_leaf": 20})
study.optimize(objective, n_trials=a.trials, catch=(lgb.basic.LightGBMError,))
states = [t.state.name for t in study.trials]
logger.info("finished: {} complete, {} pruned, {} failed", states.count("COMPLETE"), states.count("PRUNED"),
            states.count("FAIL"))
logger.success("best trial #{}: logloss {:.4f} params {}", study.best_trial.number, study.best_value,
               study.best_params)
