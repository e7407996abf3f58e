"""Optuna hyper-parameter search over a small torch MLP / LightGBM, with an RDB (sqlite) study."""
import argparse, os, sys, logging
p = argparse.ArgumentParser()
p.add_argument("--job", required=True)
p.add_argument("--storage", default="sqlite:////work/rr125/hk/work/optuna/study.db")
p.add_argument("--trials", type=int, default=12)
args = p.parse_args()
import numpy as np, torch, torch.nn as nn
import optuna
torch.set_num_threads(1)
rng = np.random.default_rng(0)
X = torch.tensor(rng.normal(size=(800, 12)), dtype=torch.float32)
y = (X[:, 0] * X[:, 1] + X[:, 2] > 0).long()

def objective(trial):
    h = trial.suggest_int("hidden", 8, 128, log=True)
    lr = trial.suggest_float("lr", 1e-4, 1e-1, log=True)
    drop = trial.suggest_float("dropout", 0.0, 0.5)
    torch.manual_seed(trial.number)
    m = nn.Sequential(nn.Linear(12, h), nn.ReLU(), nn.Dropout(drop), nn.Linear(h, 2))
    opt = torch.optim.Adam(m.parameters(), lr=lr)
    for ep in range(15):
        for i in range(0, 600, 50):
            loss = nn.functional.cross_entropy(m(X[i:i+50]), y[i:i+50])
            opt.zero_grad(); loss.backward(); opt.step()
        with torch.no_grad():
            acc = (m(X[600:]).argmax(1) == y[600:]).float().mean().item()
        trial.report(acc, ep)
        if trial.should_prune():
            raise optuna.TrialPruned()
    return acc

if args.job == "study":
    study = optuna.create_study(study_name="mlp-search", storage=args.storage, load_if_exists=True,
                                direction="maximize", pruner=optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=3))
    study.optimize(objective, n_trials=args.trials)
    print("best", study.best_trial.number, study.best_value, study.best_params, flush=True)
else:
    sys.exit("unknown job")
