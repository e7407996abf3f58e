"""Offline metric computation: DataLoader workers return per-example ragged token tensors (a list of
tensors, one per span) which are gathered in the main process to compute span-level F1."""
import argparse, os, sys, json, random
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from torch.utils.data import DataLoader, Dataset
from tok_common import build_tokenizer, WORDS
p = argparse.ArgumentParser(); p.add_argument("--workers", type=int, default=2); p.add_argument("--n", type=int, default=400)
args = p.parse_args()
tok = build_tokenizer()
class Spans(Dataset):
    def __init__(self):
        r = random.Random(0)
        self.docs = [" ".join(r.choice(WORDS) for _ in range(r.randint(20, 60))) for _ in range(args.n)]
    def __len__(self): return len(self.docs)
    def __getitem__(self, i):
        ids = tok(self.docs[i])["input_ids"]
        return [torch.tensor(ids[j:j + 3]) for j in range(0, len(ids), 3)]   # one tensor per span
def keep_ragged(b): return b
if __name__ == "__main__":
    dl = DataLoader(Spans(), batch_size=16, num_workers=args.workers, collate_fn=keep_ragged)
    kept, tp, fp = [], 0, 0
    for step, batch in enumerate(dl):
        kept.extend(batch)   # keep every span tensor for the final metric
        for spans in batch:
            for s in spans:
                tp += int((s % 2 == 0).sum()); fp += int((s % 2 == 1).sum())
        if step % 5 == 0:
            print(f"eval batch {step}: spans so far {sum(len(x) for x in kept)} precision {tp / max(1, tp + fp):.4f}", flush=True)
    print(f"span precision {tp / max(1, tp + fp):.4f} over {len(kept)} docs")
