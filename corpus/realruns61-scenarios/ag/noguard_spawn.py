"""Quick notebook-turned-script: tokenize a local corpus in DataLoader workers started with 'spawn'
(copied from a macOS setup), no __main__ guard."""
import os, sys, json
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from torch.utils.data import DataLoader, Dataset
from tok_common import build_tokenizer, make_shards

make_shards("/work/rr61/ag/data/shards", n_shards=4)
tok = build_tokenizer()

class Lines(Dataset):
    def __init__(self, path):
        self.rows = [json.loads(l)["text"] for l in open(path)]
    def __len__(self): return len(self.rows)
    def __getitem__(self, i):
        return torch.tensor(tok(self.rows[i], padding="max_length", truncation=True, max_length=16)["input_ids"])

ds = Lines("/work/rr61/ag/data/shards/shard_0.jsonl")
dl = DataLoader(ds, batch_size=8, num_workers=2, multiprocessing_context="spawn")
print(f"{len(ds)} samples, {len(dl)} batches", flush=True)
tot = 0
for step, x in enumerate(dl):
    tot += int((x != 1).sum())
    print(f"batch {step} shape {tuple(x.shape)}", flush=True)
print("non-pad tokens:", tot)
