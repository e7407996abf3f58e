"""Ray Data text pipeline: map_batches tokenises, TorchTrainer workers consume iter_torch_batches (gloo/CPU)."""
import argparse
import numpy as np
import ray
import torch, torch.nn as nn
from ray.train import ScalingConfig, RunConfig, FailureConfig
from ray.train.torch import TorchTrainer, TorchConfig

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--workers", type=int, default=2)
args = p.parse_args()

WORDS = "alpha beta gamma delta eps zeta eta theta iota kappa".split()


def tokenize(batch, max_len=12, pad=True):
    ids = []
    for t in batch["text"]:
        x = [WORDS.index(w) + 1 for w in t.split()][:max_len]
        if pad:
            x = x + [0] * (max_len - len(x))
        ids.append(np.asarray(x, dtype=np.int64))
    return {"input_ids": ids, "label": np.asarray(batch["label"], dtype=np.int64)}


def train_loop(cfg):
    import ray.train as rt
    model = rt.torch.prepare_model(nn.Sequential(nn.EmbeddingBag(len(WORDS) + 1, 16), nn.Linear(16, 2)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    shard = rt.get_dataset_shard("train")
    for epoch in range(2):
        for batch in shard.iter_torch_batches(batch_size=16):
            loss = nn.functional.cross_entropy(model(batch["input_ids"]), batch["label"])
            opt.zero_grad(); loss.backward(); opt.step()
        rt.report({"epoch": epoch, "loss": loss.item()})


if __name__ == "__main__":
    ray.init(address="local", num_cpus=4, include_dashboard=False, _temp_dir="/tmp/ray_ei")
    rng = np.random.default_rng(0)
    items = [{"text": " ".join(rng.choice(WORDS, size=int(rng.integers(3, 12)))), "label": int(rng.integers(0, 2))} for _ in range(256)]
    pad = args.fault != "no-pad"
    ds = ray.data.from_items(items).map_batches(tokenize, fn_kwargs={"pad": pad}, batch_size=32)
    trainer = TorchTrainer(
        train_loop,
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
        torch_config=TorchConfig(backend="gloo", timeout_s=30),
        datasets={"train": ds},
        run_config=RunConfig(name=f"ei_tok_{args.fault}", storage_path="/work/rr94/ei/ray_results",
                             failure_config=FailureConfig(max_failures=0)),
    )
    print("final:", trainer.fit().metrics)
