"""Token-window dataset loaded with spawn-context DataLoader workers (as on macOS/Windows
defaults, or when a library forces spawn)."""
import argparse, sys, os
import torch, torch.nn as nn
from torch.utils.data import Dataset, DataLoader

p = argparse.ArgumentParser()
p.add_argument("--mode", default="guarded")   # guarded | unguarded
p.add_argument("--collate", default="default")  # default | lambda
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=6)
args = p.parse_args()

class Windows(Dataset):
    def __init__(self, n=256, ctx=16, vocab=100):
        g = torch.Generator().manual_seed(0)
        self.tokens = torch.randint(0, vocab, (n + ctx,), generator=g)
        self.n, self.ctx = n, ctx
    def __len__(self): return self.n
    def __getitem__(self, i):
        w = self.tokens[i:i + self.ctx + 1]
        return w[:-1], w[1:]

def make_loader(ds):
    collate = None
    if args.collate == "lambda":
        pad = 0
        collate = lambda b: tuple(torch.nn.utils.rnn.pad_sequence(list(t), batch_first=True, padding_value=pad) for t in zip(*b))
    return DataLoader(ds, batch_size=8, shuffle=True, num_workers=args.workers,
                      multiprocessing_context="spawn", collate_fn=collate)

def train():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Embedding(100, 32), nn.Linear(32, 100))
    opt = torch.optim.Adam(model.parameters(), 3e-3)
    dl = make_loader(Windows())
    print(f"training with {args.workers} spawn workers", flush=True)
    for step, (x, y) in enumerate(dl):
        loss = nn.functional.cross_entropy(model(x).reshape(-1, 100), y.reshape(-1))
        opt.zero_grad(); loss.backward(); opt.step()
        print(f"step {step} loss {loss.item():.3f}", flush=True)
        if step + 1 >= args.steps: break
    print("done", flush=True)

if args.mode == "unguarded":
    train()          # top-level call: the script was converted from a notebook
elif __name__ == "__main__":
    train()
