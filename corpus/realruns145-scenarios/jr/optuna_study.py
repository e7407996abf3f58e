"""Optuna study tuning a tiny torch MLP; flags select the search space / fault."""
import argparse
p = argparse.ArgumentParser()
p.add_argument("--space", default="sane", choices=["sane", "wide", "hot"])
p.add_argument("--trials", type=int, default=8)
p.add_argument("--storage", default=None)
a = p.parse_args()

import math, numpy as np, torch, optuna
torch.manual_seed(0)
X = torch.randn(512, 10); Y = (X[:, :2].sum(1, keepdim=True) * 3.0) + 0.1 * torch.randn(512, 1)

LR = {"sane": (1e-4, 1e-1), "wide": (1e-4, 30.0), "hot": (5.0, 50.0)}[a.space]

def objective(trial):
    lr = trial.suggest_float("lr", *LR, log=True)
    hidden = trial.suggest_int("hidden", 8, 64, log=True)
    model = torch.nn.Sequential(torch.nn.Linear(10, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, 1))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for epoch in range(20):
        for i in range(0, 512, 64):
            loss = torch.nn.functional.mse_loss(model(X[i:i+64]), Y[i:i+64])
            opt.zero_grad(); loss.backward(); opt.step()
        val = torch.nn.functional.mse_loss(model(X[:128]), Y[:128]).item()
        trial.report(val, epoch)
        if not math.isnan(val) and trial.should_prune():
            raise optuna.TrialPruned()
    return val

study = optuna.create_study(direction="minimize", study_name="mlp-lr", storage=a.storage,
                            sampler=optuna.samplers.TPESampler(seed=1),
                            pruner=optuna.pruners.MedianPruner(n_startup_trials=2, n_warmup_steps=3))
study.optimize(objective, n_trials=a.trials)
print("best params:", study.best_trial.params, "value:", study.best_value)
