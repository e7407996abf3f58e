"""Ray Train (TorchTrainer) / Ray Tune tiny jobs; --fault selects the failure."""
import argparse, os, sys, time
p = argparse.ArgumentParser()
p.add_argument("--mode", default="train", choices=["train", "tune"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-epoch", type=int, default=2)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--storage", default="/work/rr135/il/tmp/ray_results")
a = p.parse_args()
os.environ.setdefault("RAY_DEDUP_LOGS", "1")
import ray
import torch, torch.nn as nn

def train_loop(config):
    import ray.train as rt
    import ray.train.torch as rtt
    ctx = rt.get_context()
    rank = ctx.get_world_rank()
    torch.manual_seed(0)
    model = rtt.prepare_model(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=config.get("lr", 0.05))
    X = torch.randn(512, 16); y = X[:, :1] * 2 + 0.1 * torch.randn(512, 1)
    for epoch in range(config["epochs"]):
        for i in range(0, 512, 64):
            xb, yb = X[i:i+64], y[i:i+64]
            if config["fault"] == "feature_drift" and rank == config["fault_rank"] and epoch == config["fault_epoch"]:
                xb = torch.cat([xb, torch.zeros(64, 1)], 1)   # new feature column appended upstream
            loss = nn.functional.mse_loss(model(xb), yb)
            opt.zero_grad(); loss.backward(); opt.step()
        if config["fault"] == "kill_self" and rank == config["fault_rank"] and epoch == config["fault_epoch"]:
            time.sleep(600)   # stays in the loop; killed externally
        rt.report({"epoch": epoch, "loss": loss.item()})
        print(f"worker rank {rank} epoch {epoch} loss {loss.item():.4f}", flush=True)

def main():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True, _temp_dir="/tmp/ray_il")
    if a.mode == "train":
        from ray.train.torch import TorchTrainer
        from ray.train import ScalingConfig, RunConfig
        trainer = TorchTrainer(train_loop,
            train_loop_config={"epochs": a.epochs, "fault": a.fault, "fault_rank": a.fault_rank, "fault_epoch": a.fault_epoch},
            scaling_config=ScalingConfig(num_workers=a.workers, use_gpu=False, resources_per_worker={"CPU": 1}),
            run_config=RunConfig(name=f"il_{a.fault}", storage_path=a.storage))
        res = trainer.fit()
        print("final metrics:", res.metrics, flush=True)
    else:
        from ray import tune
        def objective(config):
            import math, random
            x = 0.0
            for it in range(20):
                lr = config["lr"]
                x = x + lr * (1 - x)
                loss = (1 - x) ** 2 + config["wd"] * x
                tune.report({"loss": loss, "it": it})
                time.sleep(0.05)
        space = {"lr": tune.grid_search([0.01, 0.1, 0.5]), "wd": tune.grid_search([1e-4, 1e-3] + ([None] if a.fault == "wd_none" else []))}
        tuner = tune.Tuner(tune.with_resources(objective, {"cpu": 1}), param_space=space,
                           tune_config=tune.TuneConfig(metric="loss", mode="min"),
                           run_config=tune.RunConfig(name="il_tune", storage_path=a.storage))
        rg = tuner.fit()
        print("best:", rg.get_best_result().config, flush=True)
    ray.shutdown()

if __name__ == "__main__":
    main()
