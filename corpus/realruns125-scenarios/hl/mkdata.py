"""Write per-rank shard dirs: mkdata.py ROOT NRANKS NPARTS ROWS"""
import sys, os, numpy as np
root, nr, np_, rows = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
rng = np.random.default_rng(0); w = rng.normal(size=(32, 4))
for r in range(nr):
    os.makedirs(f"{root}/rank{r}", exist_ok=True)
    for k in range(np_):
        x = rng.normal(size=(rows, 32)); y = (x @ w).argmax(1)
        np.save(f"{root}/rank{r}/part-{k:05d}.npy", np.concatenate([x, y[:, None]], 1).astype(np.float32))
