"""Variable-length sequence trainer whose collate keeps each sequence as its own tensor (no padding),
with DataLoader workers and the file_descriptor sharing strategy: every tensor crossing the worker
queue costs one open file descriptor in the main process. Under a low `ulimit -n` the loader runs out.
"""
import argparse
import time

import torch
import torch.multiprocessing
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

p = argparse.ArgumentParser()
p.add_argument("--workers", type=int, default=2)
p.add_argument("--steps", type=int, default=100)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--prefetch", type=int, default=4)
p.add_argument("--strategy", default="file_descriptor")
args = p.parse_args()

torch.multiprocessing.set_sharing_strategy(args.strategy)
print(f"sharing strategy: {torch.multiprocessing.get_sharing_strategy()}", flush=True)


class Utterances(Dataset):
    def __len__(self):
        return 100000

    def __getitem__(self, i):
        g = torch.Generator().manual_seed(i)
        n = 8 + int(torch.randint(0, 24, (1,), generator=g))
        feats = torch.randn(n, 40, generator=g)
        label = torch.randint(0, 10, (1,), generator=g)
        return feats, label


def keep_lengths(batch):
    feats, labels = zip(*batch)
    return list(feats), torch.cat(labels)


class Pool(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(40, 64)
        self.out = nn.Linear(64, 10)

    def forward(self, seqs):
        return self.out(torch.stack([self.proj(s).relu().mean(0) for s in seqs]))


model = Pool()
opt = torch.optim.Adam(model.parameters(), 1e-3)
dl = DataLoader(Utterances(), batch_size=args.batch, num_workers=args.workers, collate_fn=keep_lengths,
                prefetch_factor=args.prefetch, shuffle=True)
t0 = time.time()
for step, (seqs, y) in enumerate(dl, 1):
    loss = nn.functional.cross_entropy(model(seqs), y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"step {step} loss {loss.item():.4f} ({time.time()-t0:.1f}s)", flush=True)
    if step >= args.steps:
        break
print("done", flush=True)
