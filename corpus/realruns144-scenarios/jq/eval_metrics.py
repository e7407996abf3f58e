"""DDP binary/multiclass classifier with a scikit-learn evaluation at the end of each epoch.

--case auc_shard : eval set sorted by label, sharded without shuffling -> one rank's shard is single-class (roc_auc_score)
--case f1_probs  : rank 0 passes probabilities instead of predicted labels to f1_score
--case ok        : correct evaluation (healthy)
"""
import argparse
import datetime
import os
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.nn as nn
from sklearn.metrics import f1_score, roc_auc_score
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

p = argparse.ArgumentParser()
p.add_argument("--case", default="ok")
p.add_argument("--epochs", type=int, default=2)
p.add_argument("--bs", type=int, default=32)
args = p.parse_args()

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)


def pr(*a):
    print(f"[{time.strftime('%H:%M:%S')}][rank {rank}]", *a, flush=True)


n_cls = 2 if args.case == "auc_shard" else 3
g = torch.Generator().manual_seed(0)
X = torch.randn(1200, 16, generator=g)
W = torch.randn(16, n_cls, generator=g)
Y = (X @ W).argmax(1)
Xtr, Ytr, Xev, Yev = X[:800], Y[:800], X[800:], Y[800:]
if args.case == "auc_shard":
    # eval set exported sorted by label by the preprocessing job
    order = torch.argsort(Yev, stable=True)
    Xev, Yev = Xev[order], Yev[order]
    # keep class balance roughly 50/50 so that each half is one class
    neg = (Yev == 0).nonzero().squeeze(1)
    pos = (Yev == 1).nonzero().squeeze(1)
    k = min(len(neg), len(pos))
    idx = torch.cat([neg[:k], pos[:(2 * k) // 3]])
    Xev, Yev = Xev[idx], Yev[idx]

tr = TensorDataset(Xtr, Ytr)
ev = TensorDataset(Xev, Yev)
tr_s = DistributedSampler(tr, shuffle=True)


class ContiguousShardSampler(torch.utils.data.Sampler):
    """Each rank reads one contiguous block (keeps files local to a rank)."""

    def __init__(self, ds, rank, world):
        per = len(ds) // world
        self.idx = list(range(rank * per, (rank + 1) * per))

    def __iter__(self):
        return iter(self.idx)

    def __len__(self):
        return len(self.idx)


ev_s = ContiguousShardSampler(ev, rank, world) if args.case == "auc_shard" else DistributedSampler(ev, shuffle=False)
tl = DataLoader(tr, batch_size=args.bs, sampler=tr_s)
el = DataLoader(ev, batch_size=128, sampler=ev_s)

model = DDP(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, n_cls)))
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
lf = nn.CrossEntropyLoss()

for ep in range(args.epochs):
    tr_s.set_epoch(ep)
    tot = 0.0
    for i, (x, y) in enumerate(tl):
        loss = lf(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        tot += loss.item()
        if i % 5 == 0:
            pr(f"epoch {ep} it {i}/{len(tl)} loss {loss.item():.4f}")
    pr(f"epoch {ep} train_loss {tot / len(tl):.4f}")

    model.eval()
    ys, ps = [], []
    with torch.no_grad():
        for x, y in el:
            ps.append(torch.softmax(model(x), 1))
            ys.append(y)
    model.train()
    y_true = torch.cat(ys).numpy()
    prob = torch.cat(ps).numpy()
    if args.case == "auc_shard":
        auc = roc_auc_score(y_true, prob[:, 1])
        t = torch.tensor([auc])
        dist.all_reduce(t)
        pr(f"epoch {ep} val_auc {t.item() / world:.4f}")
    else:
        # gather everything on rank 0 for the metric
        yt = [None] * world
        pp = [None] * world
        dist.all_gather_object(yt, y_true)
        dist.all_gather_object(pp, prob)
        if rank == 0:
            y_all = np.concatenate(yt)
            p_all = np.concatenate(pp)
            if args.case == "f1_probs":
                f1 = f1_score(y_all, p_all, average="macro")
            else:
                f1 = f1_score(y_all, p_all.argmax(1), average="macro")
            pr(f"epoch {ep} val_macro_f1 {f1:.4f}")
        dist.barrier()

pr("finished")
dist.destroy_process_group()
