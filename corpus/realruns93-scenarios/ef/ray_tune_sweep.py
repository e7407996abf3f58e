"""Ray Tune sweep over a tiny LM on CPU; one trial's config is broken (or the sweep is interrupted)."""
import argparse
import os
import time
import warnings

import ray
import torch
import torch.nn as nn
from ray import tune

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--cpus", type=int, default=2)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--sleep", type=float, default=0.0)
args = p.parse_args()


def trainable(config):
    torch.manual_seed(config["seed"])
    vocab = config["vocab"]
    d = config["d_model"]
    heads = config["n_head"]
    emb = nn.Embedding(vocab, d)
    attn = nn.MultiheadAttention(d, heads, batch_first=True)
    head = nn.Linear(d, 256)  # data tokenizer has 256 byte-level ids
    params = list(emb.parameters()) + list(attn.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=config["lr"])
    data = torch.randint(0, 256, (64, 12), generator=torch.Generator().manual_seed(1))
    for step in range(config["steps"]):
        x = data[(step * 8) % 64:(step * 8) % 64 + 8]
        h = emb(x)
        h, _ = attn(h, h, h)
        logits = head(h)
        loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 256), x[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if config.get("sleep"):
            time.sleep(config["sleep"])
        tune.report({"loss": loss.item(), "step": step})


def main():
    ray.init(num_cpus=args.cpus, include_dashboard=False)
    space = {
        "seed": 0,
        "steps": args.steps,
        "sleep": args.sleep,
        "lr": tune.grid_search([0.05, 0.1, 0.2]),
        "vocab": 256,
        "d_model": 32,
        "n_head": 4,
    }
    if args.fault == "vocab":
        # sweep also tries a smaller vocabulary, but data ids go up to 255
        space["vocab"] = tune.grid_search([256, 128])
        space["lr"] = tune.grid_search([0.05, 0.1])
    if args.fault == "heads":
        space["n_head"] = tune.grid_search([4, 6])
        space["lr"] = tune.grid_search([0.05, 0.1])
    tuner = tune.Tuner(
        tune.with_resources(trainable, {"cpu": 1}),
        param_space=space,
        tune_config=tune.TuneConfig(metric="loss", mode="min"),
        run_config=tune.RunConfig(name=f"rr93ef_tune_{args.fault}", storage_path="/work/rr93/ef/ray_results", verbose=1),
    )
    results = tuner.fit()
    best = results.get_best_result()
    print("Best config:", {k: best.config[k] for k in ("lr", "vocab", "n_head")}, "loss", best.metrics["loss"])
    if results.errors:
        print(f"{len(results.errors)} trial(s) errored")
    ray.shutdown()


if __name__ == "__main__":
    main()
