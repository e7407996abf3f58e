"""Ray Train (TorchTrainer, gloo on CPU) and Ray Tune tiny jobs; --fault selects failure."""
import argparse, os, tempfile
p = argparse.ArgumentParser()
p.add_argument("--mode", choices=["train", "tune"], default="train")
p.add_argument("--fault", default="none")
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--fail-epoch", type=int, default=2)
a = p.parse_args()
import ray

def train_loop(config):
    import torch, torch.nn as nn
    import ray.train as rt
    from ray.train.torch import prepare_model
    ctx = rt.get_context(); rank = ctx.get_world_rank()
    torch.manual_seed(0)
    model = prepare_model(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    g = torch.Generator().manual_seed(rank)
    X = torch.randn(256, 16, generator=g); y = X[:, :1] * 2
    for epoch in range(config["epochs"]):
        for i in range(0, 256, 32):
            xb, yb = X[i:i+32], y[i:i+32]
            if config["fault"] == "shape" and rank == config["fail_rank"] and epoch == config["fail_epoch"]:
                xb = torch.cat([xb, torch.ones(32, 1)], 1)   # shard-specific extra "bias" column
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
        rt.report({"epoch": epoch, "loss": loss.item()})

def tune_fn(config):
    from ray import tune
    import numpy as np
    acc = 0.0
    for it in range(10):
        acc += config["lr"] * (1 - acc) + np.random.rand() * 0.01
        if config["fault"] == "keyerr" and config["lr"] > 0.05:
            wd = config["weight_decay"]   # only the large-lr branch reads the decay
        tune.report({"acc": acc, "it": it})

ray.init(num_cpus=3, include_dashboard=False, log_to_driver=True)
if a.mode == "train":
    from ray.train.torch import TorchTrainer, TorchConfig
    from ray.train import ScalingConfig, RunConfig
    tr = TorchTrainer(train_loop, train_loop_config={"epochs": 4, "fault": a.fault, "fail_rank": a.fail_rank, "fail_epoch": a.fail_epoch},
                      scaling_config=ScalingConfig(num_workers=2, use_gpu=False, resources_per_worker={"CPU": 1}),
                      torch_config=TorchConfig(backend="gloo", timeout_s=60),
                      run_config=RunConfig(storage_path="/tmp/rr132id_ray_results", name=f"train_{a.fault}"))
    res = tr.fit()
    print("result:", res.metrics)
else:
    from ray import tune
    tuner = tune.Tuner(tune_fn, param_space={"lr": tune.grid_search([0.01, 0.03, 0.1]), "fault": a.fault},
                       tune_config=tune.TuneConfig(metric="acc", mode="max", max_concurrent_trials=2),
                       run_config=tune.RunConfig(storage_path="/tmp/rr132id_ray_results", name=f"tune_{a.fault}"))
    res = tuner.fit()
    print("best:", res.get_best_result().config)
ray.shutdown()
