"""Keras 3 (torch backend) per-rank shard training with gloo metric averaging.
Launched either by torchrun (env) or by --spawn N (torch.multiprocessing.spawn)."""
import argparse, os, sys
from datetime import timedelta
os.environ.setdefault("KERAS_BACKEND", "torch")
p = argparse.ArgumentParser()
p.add_argument("--fault", default="none", choices=["none", "missing_shard", "wide_shard"])
p.add_argument("--fail-rank", type=int, default=1)
p.add_argument("--spawn", type=int, default=0)
p.add_argument("--shard-dir", default="/tmp/rr132id_shards")
p.add_argument("--epochs", type=int, default=3)
a = p.parse_args()

def make_shards(world):
    import numpy as np
    os.makedirs(a.shard_dir, exist_ok=True)
    for r in range(world):
        rng = np.random.default_rng(r)
        nfeat = 22 if (a.fault == "wide_shard" and r == a.fail_rank) else 20
        X = rng.normal(size=(1024, nfeat)).astype("float32"); y = (X[:, :5].sum(1) > 0).astype("int64")
        path = os.path.join(a.shard_dir, f"shard-{r:05d}.npz")
        if a.fault == "missing_shard" and r == a.fail_rank:
            if os.path.exists(path): os.remove(path)
            continue
        np.savez(path, X=X, y=y)

def worker(rank, world):
    import numpy as np, torch, torch.distributed as dist
    import keras
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=40))
    print(f"[rank {rank}] keras {keras.__version__} backend={keras.backend.backend()} world={world}", flush=True)
    d = np.load(os.path.join(a.shard_dir, f"shard-{rank:05d}.npz"))
    X, y = d["X"], d["y"]
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input(shape=(20,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(2, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    for ep in range(a.epochs):
        h = model.fit(X, y, epochs=1, batch_size=64, verbose=2 if rank == 0 else 0)
        t = torch.tensor([h.history["loss"][-1], h.history["accuracy"][-1]])
        dist.all_reduce(t); t /= world
        if rank == 0:
            print(f"epoch {ep}: mean loss {t[0]:.4f} mean acc {t[1]:.4f}", flush=True)
    dist.barrier()
    dist.destroy_process_group()

if __name__ == "__main__":
    if a.spawn:
        os.environ["MASTER_ADDR"] = "127.0.0.1"; os.environ.setdefault("MASTER_PORT", "46333")
        make_shards(a.spawn)
        import torch.multiprocessing as mp
        mp.spawn(worker, args=(a.spawn,), nprocs=a.spawn)
    else:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        if rank == 0: make_shards(world)
        import time; time.sleep(1.0 if rank else 0)
        worker(rank, world)
