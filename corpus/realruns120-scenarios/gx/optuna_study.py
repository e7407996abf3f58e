"""Optuna hyper-parameter study tuning a small torch MLP / sklearn model on tabular data.

  --fault none|nanval|region|storage
"""
import argparse
import math
import os
import warnings

import numpy as np
import pandas as pd
import optuna
import torch
import torch.nn as nn
from sklearn.preprocessing import StandardScaler
from sklearn.model_selection import train_test_split

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--trials", type=int, default=12)
p.add_argument("--region", default="north")
p.add_argument("--storage", default=None)
p.add_argument("--study-name", default="mlp-tabular")
args = p.parse_args()

rng = np.random.default_rng(0)
n = 3000
df = pd.DataFrame(rng.normal(size=(n, 8)), columns=[f"x{i}" for i in range(8)])
df["region"] = rng.choice(["north", "south", "east", "west"], size=n)
df["target"] = df["x0"] * 2 - df["x3"] + rng.normal(scale=0.3, size=n)


def load_split(region):
    sub = df[df["region"] == region]
    X = sub[[f"x{i}" for i in range(8)]].to_numpy(np.float32)
    y = sub["target"].to_numpy(np.float32)
    Xtr, Xva, ytr, yva = train_test_split(X, y, test_size=0.25, random_state=0) if len(X) else (X, X, y, y)
    sc = StandardScaler().fit(Xtr)
    return sc.transform(Xtr), sc.transform(Xva), ytr, yva


def objective(trial):
    lr = trial.suggest_float("lr", 1e-4, 3.0 if args.fault != "nanval" else 20.0, log=True)
    width = trial.suggest_int("width", 16, 128, log=True)
    wd = trial.suggest_float("weight_decay", 1e-6, 1e-2, log=True)
    Xtr, Xva, ytr, yva = load_split(args.region)
    Xtr, Xva, ytr, yva = map(torch.from_numpy, (Xtr, Xva, ytr, yva))
    torch.manual_seed(trial.number)
    net = nn.Sequential(nn.Linear(8, width), nn.ReLU(), nn.Linear(width, 1))
    opt = torch.optim.SGD(net.parameters(), lr=lr, momentum=0.9, weight_decay=wd)
    for epoch in range(15):
        perm = torch.randperm(len(Xtr))
        for i in range(0, len(Xtr), 64):
            idx = perm[i:i + 64]
            loss = nn.functional.mse_loss(net(Xtr[idx]).squeeze(-1), ytr[idx])
            opt.zero_grad(); loss.backward(); opt.step()
        with torch.no_grad():
            val = nn.functional.mse_loss(net(Xva).squeeze(-1), yva).item()
        trial.report(val, epoch)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return val


sampler = optuna.samplers.TPESampler(seed=0, multivariate=True)  # multivariate is experimental
pruner = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=3)
if args.fault == "nanval":
    pruner = optuna.pruners.NopPruner()
study = optuna.create_study(study_name=args.study_name, storage=args.storage, direction="minimize",
                            sampler=sampler, pruner=pruner, load_if_exists=True)
study.optimize(objective, n_trials=args.trials)
print("best value", study.best_value)
print("best params", study.best_params)
