"""Prepare per-rank feature shards (npy) for ddp_train.py.

Usage: python make_shards.py OUT_DIR --ranks 4 --files 4 --rows 256 [--variant ...]
Variants reproduce data-preparation mistakes seen in practice.
"""
import argparse
import json
import os

import numpy as np

p = argparse.ArgumentParser()
p.add_argument("out")
p.add_argument("--ranks", type=int, default=2)
p.add_argument("--files", type=int, default=4)
p.add_argument("--rows", type=int, default=256)
p.add_argument("--feat", type=int, default=32)
p.add_argument("--variant", default="clean",
               choices=["clean", "wide-file", "drop-file", "zero-feature", "float-labels",
                        "bad-label-name", "dir-format", "big-eval", "missing-class"])
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-file", type=int, default=2)
a = p.parse_args()

rng = np.random.default_rng(0)
os.makedirs(a.out, exist_ok=True)
names = ["cat", "dog", "bird", "fish"]
manifest = {}
for r in range(a.ranks):
    files = []
    for i in range(a.files):
        feat = a.feat
        if a.variant == "wide-file" and r == a.bad_rank and i == a.bad_file:
            feat = a.feat + 1  # exported with the extra 'id' column
        x = rng.random((a.rows, feat), dtype=np.float32) + 0.05
        if a.variant == "zero-feature" and r == a.bad_rank and i == a.bad_file:
            x[:, 7] = 0.0  # sensor column missing -> filled with 0
        y = rng.integers(0, 4, a.rows)
        if a.variant == "missing-class" and r == a.bad_rank:
            y = rng.integers(0, 3, a.rows)  # this site never saw class 3
        lab = np.array([names[k] for k in y])
        if a.variant == "bad-label-name" and r == a.bad_rank and i == a.bad_file:
            lab[rng.integers(0, a.rows, 3)] = "Dog "
        ylab = y.astype(np.float64) if (a.variant == "float-labels" and r == a.bad_rank and i == a.bad_file) else y
        base = os.path.join(a.out, f"rank{r}_part{i:03d}")
        if a.variant == "dir-format" and r == a.bad_rank:
            os.makedirs(base, exist_ok=True)
            for j in range(a.rows):
                np.save(os.path.join(base, f"{j:05d}.npy"), x[j])
            np.save(base + "_y.npy", ylab)
            files.append(base)
        else:
            np.save(base + "_x.npy", x)
            np.save(base + "_y.npy", ylab)
            np.save(base + "_lab.npy", lab)
            files.append(base + "_x.npy")
    manifest[str(r)] = files
    n_eval = 60000 if (a.variant == "big-eval" and r == a.bad_rank) else 1000
    np.save(os.path.join(a.out, f"eval_rank{r}.npy"), rng.random((n_eval, a.feat), dtype=np.float32))

if a.variant == "drop-file":
    victim = manifest[str(a.bad_rank)][a.bad_file]
    os.remove(victim)  # manifest written before the cleanup job removed it
with open(os.path.join(a.out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
print(f"wrote {a.ranks} ranks x {a.files} files to {a.out} ({a.variant})")
