"""Ray Train TorchTrainer (2 CPU workers, gloo) / Ray Tune over a tiny MLP.

--mode train|tune  --fault none|shard|badbs
"""
import argparse, os, sys, tempfile

p = argparse.ArgumentParser()
p.add_argument("--mode", default="train")   # train | tune (TorchTrainer passed to Tuner) | tunefn (function trainable)
p.add_argument("--fault", default="none")
p.add_argument("--epochs", type=int, default=3)
p.add_argument("--data-dir", default=os.path.abspath("ray_data"))
args = p.parse_args()

import numpy as np
import torch
import torch.nn as nn
import ray
from ray import train, tune
from ray.train import ScalingConfig, RunConfig, FailureConfig
from ray.train.torch import TorchTrainer, prepare_model, prepare_data_loader

os.makedirs(args.data_dir, exist_ok=True)
rng = np.random.default_rng(0)
for i in range(2):
    f = os.path.join(args.data_dir, f"shard_{i:02d}.npy")
    if not os.path.exists(f):
        np.save(f, rng.normal(size=(512, 17)).astype(np.float32))


def train_func(config):
    rank = train.get_context().get_world_rank()
    world = train.get_context().get_world_size()
    # shards are numbered 1..N in the new export, code still counts from 0
    idx = rank + 1 if config.get("fault") == "shard" else rank
    path = os.path.join(config["data_dir"], f"shard_{idx:02d}.npy")
    arr = np.load(path)
    X, y = torch.from_numpy(arr[:, :16]), torch.from_numpy(arr[:, 16:])
    ds = torch.utils.data.TensorDataset(X, y)
    dl = torch.utils.data.DataLoader(ds, batch_size=config["batch_size"], shuffle=True)
    dl = prepare_data_loader(dl)
    model = prepare_model(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
    for epoch in range(config["epochs"]):
        tot = 0.0
        for xb, yb in dl:
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
            tot += loss.item()
        train.report({"epoch": epoch, "loss": tot / len(dl)})


ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
cfg = {"lr": 1e-2, "batch_size": 32, "epochs": args.epochs, "data_dir": args.data_dir, "fault": args.fault}
storage = os.path.abspath("ray_results")
if args.mode == "train":
    trainer = TorchTrainer(train_func, train_loop_config=cfg,
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False,
                                                        resources_per_worker={"CPU": 1}),
                           run_config=RunConfig(name=f"train_{args.fault}", storage_path=storage,
                                                failure_config=FailureConfig(max_failures=0)))
    result = trainer.fit()
    print("final metrics:", result.metrics)
elif args.mode == "tunefn":
    def tune_func(config):
        arr = np.load(os.path.join(config["data_dir"], "shard_00.npy"))
        ds = torch.utils.data.TensorDataset(torch.from_numpy(arr[:, :16]), torch.from_numpy(arr[:, 16:]))
        dl = torch.utils.data.DataLoader(ds, batch_size=config["batch_size"], shuffle=True)
        model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1))
        opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
        for epoch in range(config["epochs"]):
            tot = 0.0
            for xb, yb in dl:
                loss = nn.functional.mse_loss(model(xb), yb)
                opt.zero_grad(); loss.backward(); opt.step()
                tot += loss.item()
            tune.report({"epoch": epoch, "loss": tot / len(dl)})
    space = dict(cfg)
    space["lr"] = tune.grid_search([1e-3, 1e-2])
    if args.fault == "badbs":
        space["batch_size"] = tune.grid_search([32, 0])
    tuner = tune.Tuner(tune.with_resources(tune_func, {"cpu": 1}), param_space=space,
                       tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=1),
                       run_config=tune.RunConfig(name=f"tunefn_{args.fault}", storage_path=storage))
    res = tuner.fit()
    best = res.get_best_result()
    print("best config:", {k: best.config[k] for k in ("lr", "batch_size")}, "loss", best.metrics["loss"])
    print("errors:", len(res.errors))
else:
    space = dict(cfg)
    space["lr"] = tune.grid_search([1e-3, 1e-2])
    if args.fault == "badbs":
        space["batch_size"] = tune.grid_search([32, 0])
    trainer = TorchTrainer(train_func, scaling_config=ScalingConfig(num_workers=1, use_gpu=False))
    tuner = tune.Tuner(trainer, param_space={"train_loop_config": space},
                       tune_config=tune.TuneConfig(metric="loss", mode="min", max_concurrent_trials=1),
                       run_config=RunConfig(name=f"tune_{args.fault}", storage_path=storage))
    res = tuner.fit()
    best = res.get_best_result()
    print("best config:", best.config["train_loop_config"], "loss", best.metrics["loss"])
    print("errors:", len(res.errors))
