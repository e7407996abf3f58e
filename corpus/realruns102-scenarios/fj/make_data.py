"""Write per-rank JSONL shards for ddp_shards.py / spawn_train.py."""
import argparse, json, os, random
p = argparse.ArgumentParser()
p.add_argument("--out", default="data/shards")
p.add_argument("--world", type=int, default=2)
p.add_argument("--n", type=int, default=2048)
p.add_argument("--truncate-rank", type=int, default=-1, help="shard whose record --truncate-at is cut mid-line (interrupted copy)")
p.add_argument("--truncate-at", type=int, default=100)
p.add_argument("--inf-rank", type=int, default=-1, help="shard that gets overflowed feature values")
p.add_argument("--cat-extra-rank", type=int, default=-1, help="shard with categories beyond the others")
p.add_argument("--inf-every", type=int, default=7)
p.add_argument("--skip-rank", type=int, default=-1, help="do not write this shard")
a = p.parse_args()
os.makedirs(a.out, exist_ok=True)
for r in range(a.world):
    if r == a.skip_rank:
        continue
    rnd = random.Random(r)
    lines = []
    for i in range(a.n):
        x = [rnd.gauss(0, 1) for _ in range(16)]
        y = (x[0] > 0) * 2 + (x[1] > 0)
        cat = rnd.randrange(10 if r == a.cat_extra_rank else 8)
        w = 1.0
        if r == a.inf_rank and i % a.inf_every == 3:
            x[5] = 1e39  # float32 overflow after an upstream unit conversion
        lines.append(json.dumps({"x": [round(v, 5) if abs(v) < 1e30 else v for v in x], "y": y, "cat": cat, "w": w}))
    if r == a.truncate_rank:
        l = lines[a.truncate_at]
        lines[a.truncate_at] = l[: len(l) // 2]
    with open(os.path.join(a.out, f"shard-{r:05d}.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")
print("wrote shards to", a.out)
