"""Ray Data pipeline (map_batches decode/normalise) feeding a Ray Train TorchTrainer on CPU."""
import argparse, os, zlib, glob
import numpy as np
import ray
import torch, torch.nn as nn
from ray.train import ScalingConfig, RunConfig, FailureConfig
from ray.train.torch import TorchTrainer, TorchConfig

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--workers", type=int, default=2)
p.add_argument("--rows", type=int, default=512)
p.add_argument("--records", default="/work/rr94/ei/data/records")
args = p.parse_args()


def make_records(path, n, corrupt_idx=None):
    os.makedirs(path, exist_ok=True)
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        arr = rng.standard_normal(64).astype(np.float32)
        blob = zlib.compress(arr.tobytes())
        if corrupt_idx is not None and i == corrupt_idx:
            blob = blob[: len(blob) // 2]  # partially uploaded record
        rows.append({"id": i, "blob": blob, "label": int(rng.integers(0, 4))})
    return rows


def decode(batch):
    feats = np.stack([np.frombuffer(zlib.decompress(b), dtype=np.float32) for b in batch["blob"]])
    feats = (feats - feats.mean(1, keepdims=True)) / (feats.std(1, keepdims=True) + 1e-6)
    return {"x": feats.reshape(-1, 8, 8).astype(np.float32), "y": np.asarray(batch["label"], dtype=np.int64)}


def train_loop(cfg):
    import ray.train as rt
    ctx = rt.get_context()
    rank = ctx.get_world_rank()
    model = rt.torch.prepare_model(nn.Sequential(nn.Flatten(), nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4)))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    shard = rt.get_dataset_shard("train")
    for epoch in range(2):
        n, tot = 0, 0.0
        for batch in shard.iter_torch_batches(batch_size=32, dtypes={"x": torch.float32, "y": torch.int64}):
            loss = nn.functional.cross_entropy(model(batch["x"]), batch["y"])
            opt.zero_grad(); loss.backward(); opt.step()
            n += 1; tot += loss.item()
        rt.report({"epoch": epoch, "loss": tot / n, "batches": n})
        print(f"rank {rank} epoch {epoch} batches {n} loss {tot / n:.4f}", flush=True)


if __name__ == "__main__":
    ray.init(address="local", num_cpus=4, include_dashboard=False, _temp_dir="/tmp/ray_ei")
    if args.fault == "corrupt-record":
        ds = ray.data.from_items(make_records(args.records, args.rows, corrupt_idx=301))
    elif args.fault == "no-files":
        ds = ray.data.read_parquet(args.records + "/part-*.parquet")
    else:
        ds = ray.data.from_items(make_records(args.records, args.rows))
    ds = ds.map_batches(decode, batch_size=64)
    trainer = TorchTrainer(
        train_loop,
        scaling_config=ScalingConfig(num_workers=args.workers, use_gpu=False),
        torch_config=TorchConfig(backend="gloo", timeout_s=30),
        datasets={"train": ds},
        run_config=RunConfig(name=f"ei_data_{args.fault}", storage_path="/work/rr94/ei/ray_results",
                             failure_config=FailureConfig(max_failures=0)),
    )
    result = trainer.fit()
    print("final metrics:", result.metrics)
