"""Build per-rank data shards (and node-local copies) for shard_train.py.
Faults are planted in the data / filesystem, not in the trainer."""
import argparse, json, os, shutil
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--root", default="data")
p.add_argument("--world", type=int, default=2)
p.add_argument("--n", type=int, default=512)
p.add_argument("--features", type=int, default=16)
p.add_argument("--classes", type=int, default=10)
p.add_argument("--vocab", type=int, default=500)
p.add_argument("--seq", type=int, default=12)
p.add_argument("--format", default="npz", choices=["npz", "records", "parts", "memmap", "tokens", "tokvar"])
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=-1)
a = p.parse_args()

shutil.rmtree(a.root, ignore_errors=True)
os.makedirs(a.root)
rng = np.random.default_rng(0)
W = rng.standard_normal((a.features, a.classes)).astype(np.float32)
cfg = {"features": a.features, "classes": a.classes, "hidden": 64, "vocab": a.vocab, "seq": a.seq}
json.dump(cfg, open(os.path.join(a.root, "model.json"), "w"))

for r in range(a.world):
    bad = (r == a.fault_rank)
    n = a.n
    if bad and a.fault == "short":         # last shard of an uneven split
        n = a.n - 37
    F = a.features
    if bad and a.fault == "wide":          # preprocessing bug: extra feature columns dropped on this shard
        F = a.features - 4
    x = rng.standard_normal((n, F)).astype(np.float32)
    y = (x[:, :min(F, a.features)] @ W[:min(F, a.features)]).argmax(1).astype(np.int64)
    if bad and a.fault == "inf":           # sensor overflow in some rows of this shard
        x[200:203, 3] = np.float32(3.4e38) * 10
    if bad and a.fault == "scaled":        # this shard was normalised with a different scaler
        x = x * 0.5
    if bad and a.fault == "float64":       # this shard was written by the new exporter (float64)
        x = x.astype(np.float64)
    if bad and a.fault == "sentinel":      # missing label exported as uint16 max
        y[300] = 65535
    if bad and a.fault == "onebased":      # labels exported 1-based on this shard
        y = y + 1
    node = os.path.join(a.root, "nodelocal", f"node{r}")
    os.makedirs(node, exist_ok=True)
    ncfg = dict(cfg)
    if bad and a.fault == "staleconfig":   # node-local config copy from an older experiment
        ncfg["hidden"] = 48
    if bad and a.fault == "nominal":       # node-local config from a run with a smaller dataset
        ncfg["nominal_samples_per_rank"] = 400
    json.dump(ncfg, open(os.path.join(node, "model.json"), "w"))
    if a.format == "npz":
        np.savez(os.path.join(a.root, f"shard-{r}.npz"), x=x, y=y)
        shutil.copy(os.path.join(a.root, f"shard-{r}.npz"), os.path.join(node, f"shard-{r}.npz"))
    elif a.format == "records":
        d = os.path.join(a.root, f"shard-{r}")
        os.makedirs(d)
        for i in range(n):
            rec = np.concatenate([x[i], [np.float32(y[i])]]).astype(np.float32)
            fn = os.path.join(d, f"{i:05d}.npy")
            np.save(fn, rec)
            if bad and a.fault == "truncated" and i == 233:
                sz = os.path.getsize(fn)
                with open(fn, "r+b") as f:
                    f.truncate(sz - 37)
        with open(os.path.join(d, "index.jsonl"), "w") as f:
            for i in range(n):
                rec = {"file": f"{i:05d}.npy", "label": int(y[i])}
                if bad and a.fault == "nolabel" and i == 150:
                    rec = {"file": f"{i:05d}.npy", "lable": int(y[i])}
                f.write(json.dumps(rec) + "\n")
    elif a.format == "parts":
        d = os.path.join(a.root, f"shard-{r}")
        os.makedirs(d)
        per = 1 if (bad and a.fault == "manyparts") else 64   # re-sharded into one file per sample
        for k, s in enumerate(range(0, n, per)):
            blk = np.concatenate([x[s:s + per], y[s:s + per, None].astype(np.float32)], 1).astype(np.float32)
            blk.tofile(os.path.join(d, f"part-{k:05d}.bin"))
    elif a.format == "memmap":
        blk = np.concatenate([x, y[:, None].astype(np.float32)], 1).astype(np.float32)
        blk.tofile(os.path.join(node, f"shard-{r}.bin"))
        json.dump({"rows": n, "cols": a.features + 1}, open(os.path.join(node, f"shard-{r}.json"), "w"))
    elif a.format == "tokens":
        vocab = a.vocab
        if bad and a.fault == "newtok":    # shard tokenized with a newer, larger tokenizer
            vocab = a.vocab + 268
        ids = rng.integers(0, vocab, size=(n, a.seq + 1)).astype(np.int64)
        if bad and a.fault == "newtok":
            ids[:200] = rng.integers(0, a.vocab, size=(200, a.seq + 1))  # early batches still fit
        np.savez(os.path.join(a.root, f"shard-{r}.npz"), ids=ids)
    elif a.format == "tokvar":          # packed variable-length documents
        lens = rng.integers(8, 33, size=n)
        if bad and a.fault == "longdoc":   # one unsplit document (dedup/split step skipped for this shard)
            lens[150] = 150_000
        ids = rng.integers(1, a.vocab, size=int(lens.sum())).astype(np.int64)
        offs = np.concatenate([[0], np.cumsum(lens)]).astype(np.int64)
        np.savez(os.path.join(a.root, f"shard-{r}.npz"), ids=ids, offsets=offs)
print(f"prepared {a.world} shards in {a.root} format={a.format} fault={a.fault}@{a.fault_rank}")
