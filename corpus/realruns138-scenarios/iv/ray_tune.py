"""Ray Tune sweep of a tiny regressor; each trial runs in its own actor.
Flags: --fault {none,f64} (f64: the 'precision' search value 'double' feeds float64 features to a float32 model)
"""
import argparse, os
import numpy as np, torch, torch.nn as nn
import ray
from ray import tune

def trainable(cfg):
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, cfg["hidden"]), nn.Tanh(), nn.Linear(cfg["hidden"], 1))
    opt = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    rng = np.random.default_rng(0)
    feats = rng.standard_normal((256, 16)).astype(np.float64 if cfg["precision"] == "double" else np.float32)
    x = torch.from_numpy(feats); y = x[:, :1].float() * 3
    for it in range(30):
        loss = nn.functional.mse_loss(model(x), y)
        opt.zero_grad(); loss.backward(); opt.step()
        if it % 10 == 9:
            tune.report({"loss": loss.item(), "iter": it})

def main():
    ap = argparse.ArgumentParser(); ap.add_argument("--fault", default="f64"); a = ap.parse_args()
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir="/tmp/rr138iv_ray")
    prec = ["single", "double"] if a.fault == "f64" else ["single"]
    space = {"hidden": tune.grid_search([16, 32]), "lr": 1e-2, "precision": tune.grid_search(prec)}
    tuner = tune.Tuner(trainable, param_space=space,
                       tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=2),
                       run_config=tune.RunConfig(name=f"rr-tune-{a.fault}", storage_path=os.path.abspath("ray_results"), verbose=1))
    results = tuner.fit()
    print("errors:", results.num_errors)
    best = results.get_best_result()
    print("best config:", best.config, "loss:", best.metrics.get("loss"))

if __name__ == "__main__":
    main()
