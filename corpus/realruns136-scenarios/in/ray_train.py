"""Ray Train (TorchTrainer, gloo) and Ray Tune runs of a tiny token-classification model.

--mode train : TorchTrainer with --workers workers; --fault selects a bug on --fault-rank.
--mode tune  : Tuner over two configurations (function trainable, single process each).
"""
import argparse
import os
import tempfile
import warnings

import ray
import torch
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--mode", default="train", choices=["train", "tune"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=4)
p.add_argument("--storage", default=os.path.abspath("ray_results"))
args = p.parse_args()

BASE_VOCAB = 128


class Tagger(nn.Module):
    def __init__(self, vocab, d=32, with_aux=False):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.mix = nn.Linear(d, d)
        self.head = nn.Linear(d, 4)
        self.aux_head = nn.Linear(d, 2) if with_aux else None

    def forward(self, ids):
        h = torch.relu(self.mix(self.emb(ids)))
        return self.head(h)


def make_batch(rank, step, add_special=False):
    g = torch.Generator().manual_seed(rank * 1000 + step)
    ids = torch.randint(0, BASE_VOCAB, (8, 16), generator=g)
    if add_special:
        ids[:, 0] = BASE_VOCAB  # "<cls>" id appended to the tokenizer vocab after the model was built
    return ids, torch.randint(0, 4, (8, 16), generator=g)


def train_loop(config):
    import ray.train
    from ray.train.torch import prepare_model

    ctx = ray.train.get_context()
    rank = ctx.get_world_rank()
    model = prepare_model(Tagger(BASE_VOCAB, with_aux=config["fault"] == "aux-head"))
    opt = torch.optim.Adam(model.parameters(), lr=config["lr"])
    lossf = nn.CrossEntropyLoss()
    for epoch in range(config["epochs"]):
        tot = 0.0
        for step in range(6):
            special = config["fault"] == "special-token" and rank == config["fault_rank"] and epoch >= 1
            ids, y = make_batch(rank, epoch * 6 + step, add_special=special)
            loss = lossf(model(ids).reshape(-1, 4), y.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            tot += loss.item()
        with tempfile.TemporaryDirectory() as d:
            ckpt = None
            if rank == 0:
                torch.save(model.state_dict(), os.path.join(d, "model.pt"))
                ckpt = ray.train.Checkpoint.from_directory(d)
            ray.train.report({"epoch": epoch, "loss": tot / 6}, checkpoint=ckpt)
        print(f"[rank {rank}] epoch {epoch} mean loss {tot / 6:.4f}")


def tune_trainable(config):
    from ray import tune

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1))
    opt = torch.optim.SGD(model.parameters(), lr=config["lr"])
    x = torch.randn(256, 8).to(getattr(torch, config["target_dtype"]))  # features loaded at the sweep's precision
    y = x[:, :1] * 2 + 1
    for it in range(8):
        pred = model(x)
        loss = nn.functional.mse_loss(pred, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tune.report({"loss": float(loss), "it": it})


def main():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=True)
    if args.mode == "train":
        from ray.train import RunConfig, ScalingConfig
        from ray.train.torch import TorchConfig, TorchTrainer

        trainer = TorchTrainer(
            train_loop,
            train_loop_config={"lr": 1e-2, "epochs": args.epochs, "fault": args.fault, "fault_rank": args.fault_rank},
            scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False, resources_per_worker={"CPU": 1}),
            torch_config=TorchConfig(backend="gloo", timeout_s=60),
            run_config=RunConfig(name="tagger", storage_path=args.storage),
        )
        result = trainer.fit()
        print("final metrics:", result.metrics)
    else:
        from ray import tune

        tuner = tune.Tuner(
            tune.with_resources(tune_trainable, {"cpu": 1}),
            param_space={"lr": 0.02 if args.fault == "double-target" else tune.grid_search([0.01, 0.05]),
                         "target_dtype": tune.grid_search(["float32", "float64"]) if args.fault == "double-target"
                         else "float32"},
            tune_config=tune.TuneConfig(metric="loss", mode="min"),
            run_config=tune.RunConfig(name="reg", storage_path=args.storage),
        )
        res = tuner.fit()
        print("best config:", res.get_best_result().config)


if __name__ == "__main__":
    main()
