"""Ray Train (TorchTrainer, 2 CPU workers, gloo) training a tiny token classifier.

--fault: none, new_vocab (the worker whose shard was re-tokenized with a grown vocabulary sees ids
>= the embedding size the model was built with)
"""
import argparse
import os
import tempfile

import ray
import torch
import torch.nn as nn
import torch.nn.functional as F
import ray.train
import ray.train.torch as rtt
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchTrainer

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--storage", default=os.path.abspath("scratch/ray_results"))
args = p.parse_args()

VOCAB_MODEL = 1000


def train_loop(cfg):
    rank = ray.train.get_context().get_world_rank()
    vocab_data = VOCAB_MODEL
    if cfg["fault"] == "new_vocab" and rank == cfg["fault_rank"]:
        vocab_data = 1200  # shard re-tokenized with the v2 tokenizer (added domain tokens)
    g = torch.Generator().manual_seed(rank)
    model = nn.Sequential(nn.Embedding(VOCAB_MODEL, 32), nn.Flatten(), nn.Linear(32 * 16, 5))
    model = rtt.prepare_model(model)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    for step in range(1, cfg["steps"] + 1):
        x = torch.randint(0, VOCAB_MODEL if step < 12 else vocab_data, (32, 16), generator=g)
        y = x[:, 0] % 5
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0:
            ray.train.report({"loss": loss.item(), "step": step})


def main():
    ray.init(num_cpus=3, include_dashboard=False, log_to_driver=True, _temp_dir=os.path.abspath("scratch/rt"))
    trainer = TorchTrainer(train_loop, train_loop_config={"fault": args.fault, "fault_rank": args.fault_rank,
                                                          "steps": args.steps},
                           scaling_config=ScalingConfig(num_workers=2, use_gpu=False,
                                                        resources_per_worker={"CPU": 1}),
                           torch_config=rtt.TorchConfig(backend="gloo"),
                           run_config=RunConfig(name="tagger", storage_path=args.storage))
    result = trainer.fit()
    print("final metrics:", result.metrics)


if __name__ == "__main__":
    main()
