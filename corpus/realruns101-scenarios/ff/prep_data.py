"""Builds the per-node local data/checkpoint folders used by the mn_train.py cases."""
import json, os, sys, torch
sys.argv = [sys.argv[0]]
root = "/work/rr101/ff/work"
g = torch.Generator().manual_seed(0)
def jsonl(path, n, corrupt_at=None):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for i in range(n):
            x = torch.randn(32, generator=g).tolist()
            line = json.dumps({"x": [round(v, 4) for v in x], "y": int(sum(x[:4]) > 0)})
            if i == corrupt_at:
                line = line[: len(line) // 2]      # record cut in half by an interrupted rsync
            f.write(line + "\n")
jsonl(f"{root}/nodeA/data/train.jsonl", 512)
jsonl(f"{root}/nodeB-corrupt/data/train.jsonl", 512, corrupt_at=77)
os.makedirs(f"{root}/nodeB/data", exist_ok=True)   # exists but the sync never copied train.jsonl
v = {f"tok{i}": i for i in range(128)}
os.makedirs(f"{root}/nodeA/lm", exist_ok=True); json.dump(v, open(f"{root}/nodeA/lm/vocab.json", "w"))
v2 = dict(v); v2.update({f"<extra_{i}>": 128 + i for i in range(32)})
os.makedirs(f"{root}/nodeB/lm", exist_ok=True); json.dump(v2, open(f"{root}/nodeB/lm/vocab.json", "w"))
