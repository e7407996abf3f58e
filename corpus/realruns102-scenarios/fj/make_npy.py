import argparse, os, numpy as np
p = argparse.ArgumentParser(); p.add_argument("--out", default="data/npy"); p.add_argument("--world", type=int, default=2)
p.add_argument("--files", type=int, default=2); p.add_argument("--rows", type=int, default=4096)
p.add_argument("--ext-rank", type=int, default=-1, help="write this rank's files as .npz (older export)")
a = p.parse_args()
for r in range(a.world):
    d = os.path.join(a.out, f"part-{r}"); os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(r)
    for k in range(a.files):
        x = rng.standard_normal((a.rows, 32)).astype(np.float32); y = (x[:, 0] + x[:, 1] > 0).astype(np.int64)
        if r == a.ext_rank:
            np.savez(os.path.join(d, f"chunk{k:03d}.npz"), x=x, y=y)
        else:
            np.save(os.path.join(d, f"chunk{k:03d}_x.npy"), x); np.save(os.path.join(d, f"chunk{k:03d}_y.npy"), y)
print("ok")
