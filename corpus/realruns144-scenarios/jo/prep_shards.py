"""Write per-rank data shards for shard_train.py; --bad damages one rank's shard the way real pipelines do.

  width     : features of that shard exported with 30 columns instead of 32 (stale preprocessing)
  missing   : that shard's feature file was never uploaded
  truncated : that shard's feature file was cut short during copy
  oob       : token ids of that shard produced by a larger tokenizer (ids up to 300, vocab is 128)
  nan       : a block of rows of that shard holds NaN (failed normalisation: 0/0)
  ragged    : token sequences of that shard not padded to a fixed length
  badlabel  : that shard contains a label string the label map does not know
  fifo      : that shard's feature path is a named pipe nobody writes (stuck mount stand-in)
"""
import argparse, json, os
import numpy as np

p = argparse.ArgumentParser()
p.add_argument("--out", default="data/shards")
p.add_argument("--world", type=int, default=4)
p.add_argument("--n", type=int, default=512)
p.add_argument("--bad", default="none")
p.add_argument("--bad-rank", type=int, default=1)
p.add_argument("--bad-at", type=int, default=200)
a = p.parse_args()

os.makedirs(a.out, exist_ok=True)
for f in os.listdir(a.out):
    os.unlink(os.path.join(a.out, f))
rng = np.random.default_rng(0)
names = ["neg", "neu", "pos", "mix"]
for r in range(a.world):
    bad = a.bad != "none" and r == a.bad_rank
    d = 30 if (bad and a.bad == "width") else 32
    x = rng.normal(size=(a.n, d)).astype(np.float32)
    if bad and a.bad == "nan":
        raw = rng.normal(size=(a.n, d)).astype(np.float32)
        std = raw.std(axis=1, keepdims=True)
        std[a.bad_at:] = 0.0  # constant rows from a broken sensor export
        raw[a.bad_at:] = 1.0
        with np.errstate(all="ignore"):
            x = ((raw - raw.mean(axis=1, keepdims=True)) / std).astype(np.float32)
    hi = 300 if (bad and a.bad == "oob") else 128
    tok = rng.integers(0, 128, size=(a.n, 16))
    if bad and a.bad == "oob":
        tok[a.bad_at:] = rng.integers(0, hi, size=(a.n - a.bad_at, 16))
    if bad and a.bad == "ragged":
        tok = np.empty(a.n, dtype=object)
        for i in range(a.n):
            tok[i] = rng.integers(0, 128, size=int(rng.integers(9, 17)))
    labels = [names[i] for i in rng.integers(0, 4, size=a.n)]
    if bad and a.bad == "badlabel":
        for i in range(a.bad_at, a.n, 7):
            labels[i] = "unlabeled"
    feat = f"feat-{r:05d}.npy"
    np.save(os.path.join(a.out, feat), x)
    np.save(os.path.join(a.out, f"tok-{r:05d}.npy"), tok, allow_pickle=True)
    if bad and a.bad == "missing":
        os.unlink(os.path.join(a.out, feat))
    if bad and a.bad == "truncated":
        fp = os.path.join(a.out, feat)
        sz = os.path.getsize(fp)
        os.truncate(fp, sz // 3)
    if bad and a.bad == "fifo":
        fp = os.path.join(a.out, feat)
        os.unlink(fp)
        os.mkfifo(fp)
    json.dump({"features": feat, "tokens": f"tok-{r:05d}.npy", "labels": labels, "vocab": 128},
              open(os.path.join(a.out, f"shard-{r:05d}.json"), "w"))
print(f"wrote {a.world} shards to {a.out} (bad={a.bad} rank={a.bad_rank})")
