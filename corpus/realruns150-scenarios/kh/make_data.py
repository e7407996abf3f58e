import json, os, random, sys
out = sys.argv[1]; world = int(sys.argv[2]); n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
os.makedirs(out, exist_ok=True)
random.seed(0)
for r in range(world):
    with open(f"{out}/train-{r:05d}-of-{world:05d}.jsonl", "w") as f:
        for i in range(n):
            ids = [random.randrange(100) for _ in range(8)]
            f.write(json.dumps({"ids": ids, "label": sum(ids) % 5}) + "\n")
