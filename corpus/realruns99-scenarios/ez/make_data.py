import numpy as np, os
rng = np.random.default_rng(0)
os.makedirs("/work/rr99/ez/data", exist_ok=True)
for r in range(4):
    X = rng.normal(size=(3000, 12))
    y = ((X[:, 0] + 0.5 * X[:, 1] - X[:, 4] * X[:, 2] + rng.normal(scale=0.5, size=3000)) > 0).astype(np.float64)
    np.savez(f"/work/rr99/ez/data/shard_{r:02d}.npz", X=X, y=y)
print("ok")
