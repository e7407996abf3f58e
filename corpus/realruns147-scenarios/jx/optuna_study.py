"""Optuna study tuning a small torch MLP, with median pruning and RDB storage.
--storage URL  --trials N  --fault {none}"""
import argparse, sys, logging, warnings, math
p = argparse.ArgumentParser()
p.add_argument("--storage", default=None)
p.add_argument("--trials", type=int, default=12)
p.add_argument("--epochs", type=int, default=8)
p.add_argument("--study", default="mlp-tune")
p.add_argument("--lr-max", type=float, default=10.0)
a = p.parse_args()
import optuna, torch, torch.nn as nn
torch.manual_seed(0)
X = torch.randn(1024, 16); y = (X[:, :4].sum(1) > 0).long()
Xv = torch.randn(256, 16); yv = (Xv[:, :4].sum(1) > 0).long()
def objective(trial):
    lr = trial.suggest_float("lr", 1e-4, a.lr_max, log=True)
    width = trial.suggest_int("width", 8, 64)
    m = nn.Sequential(nn.Linear(16, width), nn.ReLU(), nn.Linear(width, 2))
    opt = torch.optim.SGD(m.parameters(), lr=lr)
    for ep in range(a.epochs):
        for i in range(0, 1024, 64):
            opt.zero_grad()
            loss = nn.functional.cross_entropy(m(X[i:i+64]), y[i:i+64])
            loss.backward(); opt.step()
        with torch.no_grad():
            vl = nn.functional.cross_entropy(m(Xv), yv).item()
        trial.report(vl, ep)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return vl
sampler = optuna.samplers.TPESampler(seed=0, multivariate=True)
study = optuna.create_study(study_name=a.study, storage=a.storage, load_if_exists=True,
                            sampler=sampler, pruner=optuna.pruners.MedianPruner(n_warmup_steps=2))
study.optimize(objective, n_trials=a.trials)
print("best", study.best_trial.number, study.best_value, study.best_params)
