"""Optuna hyper-parameter search for a LightGBM/sklearn model; optional torch.distributed aggregation."""
import argparse, os, sys, logging
import numpy as np
import optuna
p = argparse.ArgumentParser()
p.add_argument("--trials", type=int, default=25)
p.add_argument("--fault", default="none")
p.add_argument("--fail-every", type=int, default=4)
args = p.parse_args()
optuna.logging.set_verbosity(optuna.logging.INFO)
d = np.load("/work/rr99/ez/data/shard_00.npz"); X, y = d["X"], d["y"]
Xtr, ytr, Xva, yva = X[600:], y[600:], X[:600], y[:600]
import lightgbm as lgb

def objective(trial):
    params = {"objective": "binary", "verbose": -1, "num_threads": 1,
              "num_leaves": trial.suggest_int("num_leaves", 4, 64),
              "learning_rate": trial.suggest_float("learning_rate", 1e-3, 0.3, log=True),
              "min_data_in_leaf": trial.suggest_int("min_data_in_leaf", 1, 50),
              "feature_fraction": trial.suggest_float("feature_fraction", 0.3, 1.0)}
    if args.fault in ("keyerror", "soft-fail"):
        # re-use best-known booster settings as warm start when a previous best exists
        if trial.number >= 3 and trial.number % args.fail_every == 3:
            params["bagging_fraction"] = trial.study.best_trial.user_attrs["bagging_fraction"]
    dtr = lgb.Dataset(Xtr, ytr); dva = lgb.Dataset(Xva, yva, reference=dtr)
    bst = lgb.train(params, dtr, 200, valid_sets=[dva], callbacks=[optuna.integration.LightGBMPruningCallback(trial, "binary_logloss")] if False else [])
    for step in range(20, 201, 20):
        pr = bst.predict(Xva, num_iteration=step)
        ll = float(-np.mean(yva * np.log(pr + 1e-12) + (1 - yva) * np.log(1 - pr + 1e-12)))
        trial.report(ll, step)
        if args.fault != "no-prune" and trial.should_prune():
            raise optuna.TrialPruned()
    if args.fault == "nan-value" and params["learning_rate"] > 0.2:
        return float("nan")
    return ll

study = optuna.create_study(direction="minimize", study_name="lgb-hpo",
                            pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=40),
                            sampler=optuna.samplers.TPESampler(seed=7))
catch = (KeyError,) if args.fault == "soft-fail" else ()
study.optimize(objective, n_trials=args.trials, catch=catch)
print("best value", study.best_value, "params", study.best_params)
print("states:", {s.name: sum(t.state == s for t in study.trials) for s in optuna.trial.TrialState})
