"""Write per-rank jsonl shards into node-local data dirs, optionally with one damaged shard."""
import argparse, json, os, random
p = argparse.ArgumentParser()
p.add_argument("--out", required=True)          # e.g. scratch/case/node{node}
p.add_argument("--world", type=int, default=4)
p.add_argument("--nproc", type=int, default=2)
p.add_argument("--n", type=int, default=96)
p.add_argument("--seq", type=int, default=32)
p.add_argument("--vocab", type=int, default=512)
p.add_argument("--damage", default="none")
p.add_argument("--damage-rank", type=int, default=3)
p.add_argument("--damage-index", type=int, default=40)
a = p.parse_args()
rng = random.Random(0)
for r in range(a.world):
    node = r // a.nproc
    d = a.out.replace("{node}", str(node)); os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"shard_{r:02d}.jsonl")
    lines = []
    for i in range(a.n):
        rec = {"id": f"r{r}-{i}", "tokens": [rng.randrange(a.vocab) for _ in range(a.seq)], "weight": 1.0}
        if r == a.damage_rank and i == a.damage_index:
            if a.damage == "missing_key":      # upstream tokenizer job wrote raw text for a failed doc
                rec = {"id": rec["id"], "text": "<tokenization failed: timeout>", "weight": 1.0}
            elif a.damage == "oob":             # shard tokenized with the 32k tokenizer
                rec["tokens"][7] = 31873
            elif a.damage == "ragged":
                rec["tokens"] = rec["tokens"][:27]
            elif a.damage == "huge":            # concatenated document never chunked
                rec["tokens"] = [rng.randrange(a.vocab) for _ in range(120000)]
            elif a.damage == "nan":
                rec["weight"] = float("nan")
        lines.append(json.dumps(rec))
    data = "\n".join(lines) + "\n"
    if r == a.damage_rank and a.damage == "truncated":   # copy interrupted mid-line
        cut = sum(len(l) + 1 for l in lines[:a.damage_index]) + 61
        data = data[:cut] + "\n" + "\n".join(lines[a.damage_index + 3:]) + "\n"
    if r == a.damage_rank and a.damage == "absent":
        continue
    with open(path, "w") as f:
        f.write(data)
print("shards written")
