import json, os, random, sys
root, world = sys.argv[1], int(sys.argv[2]); n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
random.seed(0)
for r in range(world):
    d = os.path.join(root, f"rank{r}"); os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "train.jsonl"), "w") as f:
        for i in range(n):
            f.write(json.dumps({"id": f"doc-{r}-{i}", "ids": [random.randrange(200) for _ in range(33)]}) + "\n")
