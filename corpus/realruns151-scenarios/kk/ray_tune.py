import argparse, os, time
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
a = p.parse_args()
os.environ.setdefault("RAY_DEDUP_LOGS", "0")
import ray
from ray import tune
import numpy as np
from sklearn.datasets import make_regression
from sklearn.linear_model import SGDRegressor
X, y = make_regression(n_samples=200, n_features=10, noise=0.1, random_state=0)
def trainable(config):
    m = SGDRegressor(alpha=config["alpha"], eta0=config["lr"])
    for ep in range(5):
        m.partial_fit(X, y)
        mse = float(((m.predict(X) - y) ** 2).mean())
        if a.fault == "keyerror" and ep == 2:
            mse = mse * config["loss_weight"]  # key only defined in the new search space
        tune.report({"mse": mse, "epoch": ep})
ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
tuner = tune.Tuner(trainable, param_space={"alpha": tune.grid_search([1e-4, 1e-2]), "lr": 0.01},
                   tune_config=tune.TuneConfig(metric="mse", mode="min", max_concurrent_trials=1),
                   run_config=tune.RunConfig(storage_path="/work/rr151/kk/ray_results", name="sgd", verbose=1))
res = tuner.fit()
print("best", res.get_best_result().config)
