"""Flax linen MLP on image-like records read by a torch DataLoader (the pattern from the Flax
docs: numpy collate, JAX train step). Records live in .npy shards under --data-dir; one shard
can be corrupted (--corrupt-shard K: written by an interrupted export, truncated).
"""
import argparse, glob, os, time
import numpy as np
p = argparse.ArgumentParser()
p.add_argument("--data-dir", default="/work/rr95/el/data_shards")
p.add_argument("--make-data", action="store_true")
p.add_argument("--corrupt-shard", type=int, default=-1)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=2)
args = p.parse_args()

if args.make_data:
    os.makedirs(args.data_dir, exist_ok=True)
    r = np.random.default_rng(0)
    for k in range(12):
        fn = os.path.join(args.data_dir, f"shard_{k:03d}.npy")
        np.save(fn, r.normal(size=(64, 16, 16)).astype(np.float32))
        if k == args.corrupt_shard:
            sz = os.path.getsize(fn)
            with open(fn, "r+b") as f:
                f.truncate(sz // 3)
    print(f"wrote 12 shards to {args.data_dir}")
    raise SystemExit(0)

import torch
from torch.utils.data import Dataset, DataLoader
import jax, jax.numpy as jnp, flax.linen as nn, optax


class ShardDataset(Dataset):
    def __init__(self, d):
        self.files = sorted(glob.glob(os.path.join(d, "shard_*.npy")))
    def __len__(self):
        return len(self.files) * 64
    def __getitem__(self, i):
        arr = np.load(self.files[i // 64], mmap_mode="r")
        x = np.array(arr[i % 64]).reshape(-1)
        y = int(x.sum() > 0)
        return x, y


def numpy_collate(batch):
    xs, ys = zip(*batch)
    return np.stack(xs), np.array(ys, np.int32)


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(64)(x))
        return nn.Dense(2)(x)


ds = ShardDataset(args.data_dir)
dl = DataLoader(ds, batch_size=32, shuffle=False, num_workers=args.workers, collate_fn=numpy_collate)
print(f"dataset: {len(ds.files)} shards, {len(ds)} records, {len(dl)} batches/epoch, workers={args.workers}", flush=True)
model = MLP()
params = model.init(jax.random.PRNGKey(0), jnp.zeros((1, 256)))
tx = optax.adam(1e-3)
opt = tx.init(params)

@jax.jit
def step(params, opt, x, y):
    def lf(p):
        return optax.softmax_cross_entropy_with_integer_labels(model.apply(p, x), y).mean()
    l, g = jax.value_and_grad(lf)(params)
    u, opt = tx.update(g, opt, params)
    return optax.apply_updates(params, u), opt, l

t0 = time.time()
for ep in range(args.epochs):
    for i, (x, y) in enumerate(dl):
        params, opt, loss = step(params, opt, x, y)
        if i % 4 == 0:
            print(f"epoch {ep} batch {i}/{len(dl)} loss {float(loss):.4f} t={time.time()-t0:.1f}s", flush=True)
print("finished", flush=True)
