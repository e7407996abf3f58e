"""Optuna hyper-parameter search over a small torch MLP (single process)."""
import argparse
import logging
import sys

import optuna
import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--trials", type=int, default=6)
p.add_argument("--head-dropout-grid", action="store_true", help="use the categorical grid for the head dropout")
args = p.parse_args()

optuna.logging.enable_default_handler()
g = torch.Generator().manual_seed(0)
X = torch.randn(1500, 24, generator=g)
Y = (X[:, :5].sum(1) > 0).long()


def build(trial):
    drop = trial.suggest_float("dropout", 0.0, 0.5)
    width = trial.suggest_int("width", 16, 128, log=True)
    layers = [nn.Linear(24, width), nn.ReLU(), nn.Dropout(drop)]
    if args.head_dropout_grid:
        # head dropout from the shared search-space helper (grid)
        hd = trial.suggest_categorical("dropout", [0.0, 0.1, 0.2])
    else:
        hd = trial.suggest_float("head_dropout", 0.0, 0.3)
    layers += [nn.Linear(width, width), nn.ReLU(), nn.Dropout(hd), nn.Linear(width, 2)]
    return nn.Sequential(*layers)


def objective(trial):
    model = build(trial)
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    lf = nn.CrossEntropyLoss()
    for ep in range(15):
        idx = torch.randperm(1200)
        for i in range(0, 1200, 100):
            b = idx[i:i + 100]
            loss = lf(model(X[b]), Y[b])
            opt.zero_grad()
            loss.backward()
            opt.step()
        model.eval()
        with torch.no_grad():
            acc = (model(X[1200:]).argmax(1) == Y[1200:]).float().mean().item()
        model.train()
        trial.report(acc, ep)
        if trial.should_prune():
            raise optuna.TrialPruned()
    print(f"trial {trial.number}: val_acc={acc:.4f} lr={lr:.2e}", flush=True)
    return acc


study = optuna.create_study(direction="maximize", study_name="mlp-search",
                            pruner=optuna.pruners.MedianPruner(n_startup_trials=2))
study.optimize(objective, n_trials=args.trials)
print("best:", study.best_trial.params, study.best_value)
