"""Build the small local datasets used by the scenarios."""
import json, os, numpy as np
root = "/work/rr143/jk/data/shards"
os.makedirs(root, exist_ok=True); os.makedirs(root + "/meta", exist_ok=True); os.makedirs(root + "/stream", exist_ok=True)
rng = np.random.default_rng(0)
items = []
for i in range(240):
    n = 32 if i not in (61, 130, 177, 219) else int(rng.integers(9, 30))  # document tail chunks are shorter
    a = rng.integers(1, 500, size=n).astype(np.int16)
    fn = f"s{i:04d}.npy"
    np.save(os.path.join(root, fn), a)
    items.append({"file": fn, "label": "pos" if i % 2 else "neg", "hdr_ptr": 0})
with open(root + "/index.jsonl", "w") as f:
    for it in items:
        f.write(json.dumps(it) + "\n")
for k, nrec in enumerate([400, 400, 130]):  # three stream shards of unequal size
    with open(f"{root}/stream/part-{k:05d}.jsonl", "w") as f:
        for j in range(nrec):
            ids = rng.integers(1, 500, size=int(rng.integers(10, 40))).tolist()
            f.write(json.dumps({"ids": ids, "y": int(j % 2)}) + "\n")
print("ok", len(items))
