"""Tiny char-level LM under DDP that prints a sample every --sample-every steps (rank 0 only).

The sampling temperature comes from --temperature; 0 was meant as "greedy".
"""
import argparse
import os
import time
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

p = argparse.ArgumentParser()
p.add_argument("--temperature", type=float, default=0.8)
p.add_argument("--top-k", type=int, default=0)
p.add_argument("--steps", type=int, default=60)
p.add_argument("--sample-every", type=int, default=20)
args = p.parse_args()

dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
text = ("the quick brown fox jumps over the lazy dog. " * 40 +
        "pack my box with five dozen liquor jugs. " * 40)
chars = sorted(set(text))
stoi = {c: i for i, c in enumerate(chars)}
data = torch.tensor([stoi[c] for c in text])
V = len(chars)


class CharLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 48)
        self.rnn = nn.GRU(48, 96, batch_first=True)
        self.out = nn.Linear(96, V)

    def forward(self, x, h=None):
        y, h = self.rnn(self.emb(x), h)
        return self.out(y), h


torch.manual_seed(0)
model = nn.parallel.DistributedDataParallel(CharLM())
opt = torch.optim.Adam(model.parameters(), lr=3e-3)
g = torch.Generator().manual_seed(rank)


@torch.no_grad()
def sample(m, n=40):
    x = torch.tensor([[stoi["t"]]])
    h, out = None, "t"
    for _ in range(n):
        logits, h = m(x, h)
        logits = logits[:, -1] / args.temperature
        if args.top_k:
            v, _ = torch.topk(logits, args.top_k)
            logits[logits < v[:, [-1]]] = -float("inf")
        probs = F.softmax(logits, dim=-1)
        x = torch.multinomial(probs, num_samples=1)
        out += chars[x.item()]
    return out


t0 = time.time()
for step in range(1, args.steps + 1):
    idx = torch.randint(0, len(data) - 33, (16,), generator=g)
    xb = torch.stack([data[i:i + 32] for i in idx])
    yb = torch.stack([data[i + 1:i + 33] for i in idx])
    logits, _ = model(xb)
    loss = F.cross_entropy(logits.reshape(-1, V), yb.reshape(-1))
    opt.zero_grad()
    loss.backward()
    opt.step()
    if step % 10 == 0:
        print(f"[rank{rank}] iter {step} loss {loss.item():.4f} time {time.time()-t0:.1f}s", flush=True)
    if step % args.sample_every == 0:
        if rank == 0:
            print(f"[rank0] sample @ {step}: {sample(model.module)!r}", flush=True)
        dist.barrier()
if rank == 0:
    print("done", flush=True)
dist.destroy_process_group()
