"""Ray Tune scenarios: function trainables, ASHA, failing / interrupted trials."""
import argparse, os, json, time, tempfile, argparse as _ap
import ray
from ray import tune
from ray.tune.schedulers import ASHAScheduler

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--samples", type=int, default=4)
p.add_argument("--iters", type=int, default=12)
p.add_argument("--name", default="fx_tune")
p.add_argument("--storage", default="/work/rr108/fx/work/tune_results")
p.add_argument("--sleep", type=float, default=0.3)
args = p.parse_args()


class RunSpec:
    """Experiment metadata kept next to the weights (a plain python object)."""
    def __init__(self, arch, hidden):
        self.arch = arch
        self.hidden = hidden


def trainable(config):
    import torch, torch.nn as nn
    torch.manual_seed(config.get("seed", 0))
    hidden = config["hidden"]
    model = nn.Sequential(nn.Linear(8, hidden), nn.Tanh(), nn.Linear(hidden, 1))
    if config.get("init_from"):
        blob = torch.load(config["init_from"])
        model.load_state_dict(blob["model"])
        print(f"warm start from {config['init_from']} ({blob['spec'].arch})")
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
    X = torch.randn(256, 8)
    y = X @ torch.linspace(-1, 1, 8).unsqueeze(1) + 0.1 * torch.randn(256, 1)
    for it in range(config["iters"]):
        for i in range(0, 256, 32):
            loss = nn.functional.mse_loss(model(X[i:i+32]), y[i:i+32])
            opt.zero_grad(); loss.backward(); opt.step()
        time.sleep(config["sleep"])
        tune.report({config.get("metric_key", "loss"): loss.item(), "it": it})


if __name__ == "__main__":
    ray.init(num_cpus=2, include_dashboard=False)
    space = {"lr": tune.loguniform(1e-3, 1e-1), "hidden": tune.choice([16, 32]),
             "iters": args.iters, "sleep": args.sleep, "seed": tune.randint(0, 1000)}
    callbacks = []
    if args.fault == "metric":
        # trainable was switched to the shared reporting helper, which names the metric "train/mse"
        space["metric_key"] = "train/mse"
    if args.fault == "trial-error":
        # hidden sizes read from a sweep file written by hand; one entry was quoted
        space["hidden"] = tune.grid_search(json.loads('[16, 32, "64"]'))
        args.samples = 1
    if args.fault == "weights-only":
        import torch, torch.nn as nn
        os.makedirs("/work/rr108/fx/work/pretrain", exist_ok=True)
        init = "/work/rr108/fx/work/pretrain/warm_start.pt"
        m = nn.Sequential(nn.Linear(8, 32), nn.Tanh(), nn.Linear(32, 1))
        torch.save({"model": m.state_dict(), "spec": RunSpec("mlp-tanh", 32)}, init)
        print(f"wrote warm-start weights to {init}")
        space["hidden"] = 32
        space["init_from"] = init
    if args.fault == "wandb":
        from ray.air.integrations.wandb import WandbLoggerCallback
        callbacks.append(WandbLoggerCallback(project="fx-sweeps", log_config=True))
    sched = ASHAScheduler(max_t=args.iters, grace_period=3, reduction_factor=2)
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        param_space=space,
        tune_config=tune.TuneConfig(metric="loss", mode="min", num_samples=args.samples, scheduler=sched),
        run_config=tune.RunConfig(name=args.name, storage_path=args.storage, callbacks=callbacks, verbose=1),
    )
    results = tuner.fit()
    best = results.get_best_result()
    print("best config:", {k: best.config[k] for k in ("lr", "hidden")}, "loss:", best.metrics["loss"])
    errs = results.errors
    if errs:
        print(f"{len(errs)} trial(s) errored")
        raise SystemExit(1)
    ray.shutdown()
