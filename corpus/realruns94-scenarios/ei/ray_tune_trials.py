"""Ray Tune hyper-parameter sweep over a small torch MLP/embedding model; one trial's config carries the bug."""
import argparse, os, math, warnings
import ray
from ray import tune
import torch, torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--samples", type=int, default=1)
args = p.parse_args()


def trainable(config):
    torch.manual_seed(config["seed"])
    emb = nn.Embedding(200, 24, sparse=config["sparse_emb"])
    head = nn.Sequential(nn.Linear(24, config["hidden"]), nn.GELU(), nn.Linear(config["hidden"], 5))
    params = list(emb.parameters()) + list(head.parameters())
    opt = torch.optim.Adam(params, lr=config["lr"]) if config["opt"] == "adam" else torch.optim.SGD(params, lr=config["lr"])
    feats_dtype = torch.float64 if config["feats"] == "f64" else torch.float32
    extra = nn.Linear(4, 24)
    for it in range(config["iters"]):
        tok = torch.randint(0, 200, (16, 10))
        side = torch.randn(16, 4, dtype=feats_dtype)  # numeric side features from the csv loader
        h = emb(tok).mean(1)
        if config["use_side"]:
            h = h + extra(side)
        out = head(h)
        loss = nn.functional.cross_entropy(out, torch.randint(0, 5, (16,)))
        opt.zero_grad()
        loss.backward()
        opt.step()
        tune.report({"loss": loss.item(), "iter": it})


if __name__ == "__main__":
    ray.init(address="local", num_cpus=4, include_dashboard=False, _temp_dir="/tmp/ray_ei")
    space = {
        "seed": 0, "iters": 6, "sparse_emb": False, "opt": "adam", "feats": "f32", "use_side": True,
        "lr": tune.grid_search([1e-3, 3e-3, 1e-2]),
        "hidden": tune.choice([32, 64]),
    }
    if args.fault == "sparse-adam":
        # the 3rd grid point tries the memory-saving sparse embedding variant
        space["sparse_emb"] = tune.grid_search([False, True])
        space["lr"] = 3e-3
    if args.fault == "f64-side":
        space["feats"] = tune.grid_search(["f32", "f64", "f32"])
        space["lr"] = 3e-3
    tuner = tune.Tuner(
        trainable,
        param_space=space,
        tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=args.samples, max_concurrent_trials=2),
        run_config=tune.RunConfig(name=f"ei_tune_{args.fault}", storage_path="/work/rr94/ei/ray_results", verbose=1),
    )
    results = tuner.fit()
    best = results.get_best_result()
    print("best config:", best.config, "loss:", best.metrics["loss"])
    if results.errors:
        print(f"{len(results.errors)} trial(s) errored")
        raise SystemExit(1)
