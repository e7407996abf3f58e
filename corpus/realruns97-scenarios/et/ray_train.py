"""Ray Train TorchTrainer (2 CPU workers, gloo) and Ray Tune on a tiny token classifier.

--mode train | tune
--fault:
  none      healthy
  kill      worker of rank --rank-fault is SIGKILLed mid-epoch (as by the kernel OOM killer)
  vocab     rank --rank-fault reads a shard tokenised with a newer tokenizer (ids up to vocab+3)
  key       (tune) trainable reads config["learning_rate"] but the search space names it "lr"
  nan       (tune) one trial's lr diverges; trainable raises on non-finite loss
  pginit    train loop still calls dist.init_process_group itself (ported from torchrun)
"""
import argparse
import os
import signal
import sys
import time

p = argparse.ArgumentParser()
p.add_argument("--mode", default="train")
p.add_argument("--fault", default="none")
p.add_argument("--rank-fault", type=int, default=1)
p.add_argument("--step", type=int, default=15)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--storage", default="/work/rr97/et/tmp/ray_results")
args = p.parse_args()

import numpy as np
import torch
import torch.nn as nn
import ray

VOCAB = 100


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.EmbeddingBag(VOCAB, 32)
        self.fc = nn.Linear(32, 4)

    def forward(self, x):
        return self.fc(self.emb(x))


def make_shard(rank, n=512):
    rng = np.random.default_rng(rank)
    hi = VOCAB + 3 if (args.fault == "vocab" and rank == args.rank_fault) else VOCAB
    x = rng.integers(0, hi, size=(n, 16))
    y = (x[:, 0] % 4)
    return torch.as_tensor(x), torch.as_tensor(y)


def train_loop(config):
    import ray.train as rt
    import ray.train.torch as rtt
    ctx = rt.get_context()
    rank = ctx.get_world_rank()
    if args.fault == "pginit":
        # left over from the torchrun version of this script
        import torch.distributed as dist
        from datetime import timedelta
        dist.init_process_group("gloo", timeout=timedelta(seconds=30))
    model = rtt.prepare_model(Net())
    opt = torch.optim.AdamW(model.parameters(), lr=config.get("lr", 3e-3))
    x, y = make_shard(rank)
    lossf = nn.CrossEntropyLoss()
    for step in range(1, config["steps"] + 1):
        if args.fault == "kill" and rank == args.rank_fault and step == args.step:
            os.kill(os.getpid(), signal.SIGKILL)
        idx = torch.randint(0, len(x), (32,))
        if args.fault == "vocab" and rank == args.rank_fault and step >= args.step:
            idx = torch.arange(len(x))[x.max(1).values >= VOCAB][:32]
        loss = lossf(model(x[idx]), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            print(f"[worker rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
            rt.report({"loss": loss.item(), "step": step})


def trainable(config):
    from ray import tune
    torch.manual_seed(0)
    model = Net()
    lr = config["learning_rate"] if args.fault == "key" else config["lr"]
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    x, y = make_shard(0)
    lossf = nn.CrossEntropyLoss()
    for step in range(1, 31):
        idx = torch.randint(0, len(x), (64,))
        loss = lossf(model(x[idx]) * config.get("scale", 1.0), y[idx])
        opt.zero_grad()
        loss.backward()
        opt.step()
        if not torch.isfinite(loss):
            raise FloatingPointError(f"loss is {loss.item()} at step {step} (lr={lr})")
        if step % 10 == 0:
            tune.report({"loss": loss.item(), "step": step})


def main():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
    if args.mode == "train":
        from ray.train import ScalingConfig, RunConfig
        from ray.train.torch import TorchTrainer, TorchConfig
        trainer = TorchTrainer(train_loop, train_loop_config={"steps": args.steps, "lr": 3e-3},
                               scaling_config=ScalingConfig(num_workers=2, use_gpu=False,
                                                            resources_per_worker={"CPU": 1}),
                               torch_config=TorchConfig(backend="gloo", timeout_s=60),
                               run_config=RunConfig(name=f"tiny-{args.fault}", storage_path=args.storage))
        result = trainer.fit()
        print("result metrics:", result.metrics)
    else:
        from ray import tune
        space = {"lr": tune.grid_search([0.05, 0.5]), "scale": 1.0}
        if args.fault == "nan":
            space = {"lr": tune.grid_search([0.05, 400.0]), "scale": 50.0}
        tuner = tune.Tuner(tune.with_resources(trainable, {"cpu": 1}), param_space=space,
                           tune_config=tune.TuneConfig(metric="loss", mode="min"),
                           run_config=tune.RunConfig(name=f"tune-{args.fault}", storage_path=args.storage))
        results = tuner.fit()
        print("best config:", results.get_best_result().config)
        for r in results:
            if r.error:
                print("trial error:", type(r.error).__name__)
    ray.shutdown()


if __name__ == "__main__":
    main()
