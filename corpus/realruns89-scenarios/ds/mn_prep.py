"""Write per-rank jsonl shards for mn_train.py.  --world N shards in --out.
--drop-key RANK:IDX   record IDX of RANK's shard written by the old exporter (no 'label' field)
--new-tokenizer RANK  RANK's shard tokenised with the new 128-entry vocab (ids up to 127)
--nan RANK:IDX        feature overflow in RANK's shard (float32 'inf' from a bad unit conversion)
--no-aux RANK         RANK's shard exported without the 'aux' column
"""
import argparse, json, os, random
p = argparse.ArgumentParser()
p.add_argument("--out", required=True); p.add_argument("--world", type=int, default=4)
p.add_argument("--n", type=int, default=200)
p.add_argument("--drop-key", default=""); p.add_argument("--new-tokenizer", type=int, default=-1)
p.add_argument("--nan", default=""); p.add_argument("--no-aux", type=int, default=-1)
p.add_argument("--cache", action="store_true")
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
drop = tuple(map(int, a.drop_key.split(":"))) if a.drop_key else None
nan = tuple(map(int, a.nan.split(":"))) if a.nan else None
for r in range(a.world):
    rnd = random.Random(r)
    with open(os.path.join(a.out, f"shard_{r}.jsonl"), "w") as f:
        for i in range(a.n):
            vocab = 128 if r == a.new_tokenizer else 100
            rec = {"id": i, "tokens": [rnd.randrange(vocab) for _ in range(6)],
                   "feats": [rnd.gauss(0, 1) for _ in range(4)], "label": rnd.randrange(3)}
            if r != a.no_aux:
                rec["aux"] = rnd.randrange(2)
            if nan and nan == (r, i):
                rec["feats"][2] = 1e39 * 1e300  # inf
            if drop and drop == (r, i):
                del rec["label"]
            f.write(json.dumps(rec) + "\n")
if a.cache:
    os.makedirs(os.path.join(a.out, "cache"), exist_ok=True)
    for i in range(50):
        open(os.path.join(a.out, "cache", f"{i}.bin"), "wb").write(os.urandom(64))
print("wrote", a.world, "shards to", a.out)
