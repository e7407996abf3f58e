"""Recursive tree encoder (TreeRNN) trained with DDP. Samples are random binary parse trees; --deep-index I puts
one degenerate (chain-shaped) tree of depth --depth into the dataset. sys.setrecursionlimit is raised because
the encoder recurses once per tree level."""
import argparse, os, sys, random, faulthandler, pickle, hashlib
from datetime import timedelta
import torch, torch.nn as nn, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

p = argparse.ArgumentParser()
p.add_argument("--depth", type=int, default=30000)
p.add_argument("--deep-index", type=int, default=-1)
p.add_argument("--steps", type=int, default=40)
p.add_argument("--faulthandler", action="store_true")
args = p.parse_args()
if args.faulthandler: faulthandler.enable()
sys.setrecursionlimit(1_000_000)
dist.init_process_group("gloo", timeout=timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()

def rand_tree(rng, n):
    if n == 1: return rng.randrange(500)
    k = rng.randrange(1, n)
    return (rand_tree(rng, k), rand_tree(rng, n - k))
def chain(d):
    t = 7
    for i in range(d): t = (t, i % 500)
    return t

rng = random.Random(0)
data = [(rand_tree(rng, rng.randrange(2, 40)), rng.randrange(3)) for _ in range(200)]
if args.deep_index >= 0:
    data[args.deep_index] = (chain(args.depth), 1)

class Compose(nn.Module):
    def __init__(s, d): super().__init__(); s.l = nn.Linear(2 * d, d)
    def forward(s, a, b): return torch.tanh(s.l(torch.cat([a, b], -1)))
class TreeEnc(nn.Module):
    def __init__(s, d=32):
        super().__init__(); s.emb = nn.Embedding(500, d); s.comp = Compose(d); s.out = nn.Linear(d, 3)
    def enc(s, t):
        if isinstance(t, int): return s.emb.weight[t]
        return s.comp(s.enc(t[0]), s.enc(t[1]))
    def forward(s, t): return s.out(s.enc(t))

model = DDP(TreeEnc())
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
print(f"rank {rank}: {len(data)} trees, recursion limit {sys.getrecursionlimit()}", flush=True)
seen = {}
for step in range(args.steps):
    idx = (step * world + rank) % len(data)
    t, y = data[idx]
    key = hashlib.sha1(pickle.dumps(t)).hexdigest()  # dedupe identical trees across epochs
    seen[key] = seen.get(key, 0) + 1
    loss = nn.functional.cross_entropy(model(t).unsqueeze(0), torch.tensor([y]))
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 5 == 0: print(f"rank {rank} step {step} sample {idx} loss {loss.item():.4f}", flush=True)
dist.barrier()
print(f"rank {rank}: done", flush=True)
dist.destroy_process_group()
