"""Feature records from per-rank JSONL shards; collation faults.
--fault {none,widerow,nonesample,missingkey,padlabels} --fault-rank R --fault-sample K"""
import os, sys, argparse, json
import torch
import torch.distributed as dist
from torch.utils.data import Dataset, DataLoader
from torch.nn.utils.rnn import pad_sequence
sys.path.insert(0, os.path.dirname(__file__))
from common import setup, MLP, wrap

p = argparse.ArgumentParser()
p.add_argument("--data", default="/work/rr63/al/data/jsonl")
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-sample", type=int, default=45)
p.add_argument("--n", type=int, default=96)
p.add_argument("--bs", type=int, default=8)
p.add_argument("--workers", type=int, default=2)
p.add_argument("--epochs", type=int, default=1)
a = p.parse_args()
rank, ws = setup()
import random
random.seed(rank)
os.makedirs(a.data, exist_ok=True)
path = os.path.join(a.data, f"part-{rank:05d}.jsonl")
with open(path, "w") as f:
    for i in range(a.n):
        rec = {"id": f"r{rank}-{i}", "features": [round(random.gauss(0, 1), 4) for _ in range(16)],
               "label": random.randrange(4)}
        if a.fault != "none" and rank == a.fault_rank and i == a.fault_sample:
            if a.fault == "widerow":      # upstream export added a column to some rows
                rec["features"].append(0.0)
            elif a.fault == "missingkey": # some rows exported before 'label' existed
                del rec["label"]
            elif a.fault == "nonesample":
                rec["features"] = None    # null in export
        f.write(json.dumps(rec) + "\n")
if ws > 1:
    dist.barrier()

class JsonlFeatures(Dataset):
    def __init__(self, path):
        self.rows = [json.loads(l) for l in open(path)]
    def __len__(self):
        return len(self.rows)
    def __getitem__(self, i):
        r = self.rows[i]
        if r["features"] is None:
            return None          # "skip" bad rows  (default_collate can't cope)
        out = {"x": torch.tensor(r["features"], dtype=torch.float32)}
        if "label" in r:
            out["y"] = torch.tensor(r["label"])
        return out

ds = JsonlFeatures(path)
if a.fault == "lambda_forkserver":
    # "fork is unsafe with threads" -> switched workers to forkserver; collate kept as a lambda
    dl = DataLoader(ds, batch_size=a.bs, num_workers=a.workers, shuffle=False, multiprocessing_context="forkserver",
                    collate_fn=lambda rows: {"x": torch.stack([r["x"] for r in rows]), "y": torch.stack([r["y"] for r in rows])})
else:
    dl = DataLoader(ds, batch_size=a.bs, num_workers=a.workers, shuffle=False)
torch.manual_seed(0)
model = wrap(MLP(), ws)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
print(f"[rank{rank}] loaded {len(ds)} rows from {path}; {len(dl)} batches", flush=True)
step = 0
for ep in range(a.epochs):
    for b in dl:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(b["x"]), b["y"])
        loss.backward(); opt.step(); step += 1
        if step % 3 == 0:
            print(f"[rank{rank}] ep={ep} step={step} loss={loss.item():.4f}", flush=True)
if ws > 1:
    dist.barrier(); dist.destroy_process_group()
print(f"[rank{rank}] done", flush=True)
