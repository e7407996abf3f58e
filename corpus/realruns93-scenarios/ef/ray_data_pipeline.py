"""Ray Data pipeline (jsonl shards -> tokenize map -> TorchTrainer dataset shard), faults in the data."""
import argparse
import json
import os
import random

import numpy as np
import ray
import torch
import torch.nn as nn
from ray import train
from ray.train import ScalingConfig, RunConfig
from ray.train.torch import TorchTrainer

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--data", default="/work/rr93/ef/data/shards")
p.add_argument("--cpus", type=int, default=3)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--no-train", action="store_true")
args = p.parse_args()

SEQ = 16


def write_shards(d, fault):
    os.makedirs(d, exist_ok=True)
    rng = random.Random(0)
    words = "the quick brown fox jumps over a lazy dog while ray trains tiny models on cpu".split()
    for s in range(4):
        with open(os.path.join(d, f"shard-{s:03d}.jsonl"), "w") as f:
            for i in range(64):
                rec = {"id": s * 64 + i, "text": " ".join(rng.choice(words) for _ in range(rng.randint(8, 20)))}
                line = json.dumps(rec)
                if fault == "corrupt" and s == 2 and i == 17:
                    line = line[: len(line) // 2]  # shard truncated by an interrupted copy
                f.write(line + "\n")


def parse(batch):
    recs = [json.loads(l) for l in batch["raw"]]
    return {"id": np.array([r["id"] for r in recs]), "text": np.array([r["text"] for r in recs])}


def tokenize(batch):
    ids = []
    for t in batch["text"]:
        b = list(t.encode("utf-8"))
        if args.fault != "ragged":
            b = (b + [0] * SEQ)[:SEQ]
        ids.append(np.array(b, dtype=np.int64))
    if args.fault == "ragged":
        return {"input_ids": np.array(ids, dtype=object)}
    return {"input_ids": np.stack(ids)}


def train_loop(cfg):
    shard = train.get_dataset_shard("train")
    model = train.torch.prepare_model(nn.Sequential(nn.Embedding(256, 32), nn.Linear(32, 256)))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    rank = train.get_context().get_world_rank()
    for epoch in range(2):
        for i, batch in enumerate(shard.iter_torch_batches(batch_size=16)):
            x = batch["input_ids"]
            logits = model(x[:, :-1])
            loss = nn.functional.cross_entropy(logits.reshape(-1, 256), x[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if rank == 0 and i % 4 == 0:
                print(f"epoch {epoch} it {i} loss {loss.item():.4f}", flush=True)
        train.report({"epoch": epoch, "loss": loss.item()})


def main():
    if args.fault in ("none", "corrupt", "ragged"):
        write_shards(args.data, args.fault)
    ray.init(num_cpus=args.cpus, include_dashboard=False)
    ds = ray.data.read_text(args.data).rename_columns({"text": "raw"})
    ds = ds.map_batches(parse, batch_size=32).map_batches(tokenize, batch_size=32)
    if args.no_train:
        n = 0
        for b in ds.iter_batches(batch_size=64):
            n += len(b["input_ids"])
        print("rows", n)
        ray.shutdown()
        return
    trainer = TorchTrainer(
        train_loop,
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
        datasets={"train": ds},
        run_config=RunConfig(name=f"rr93ef_data_{args.fault}", storage_path="/work/rr93/ef/ray_results"),
    )
    res = trainer.fit()
    print("done", res.metrics)
    ray.shutdown()


if __name__ == "__main__":
    main()
