"""Shared helpers for the torch.compile scenario families (tiny models, dist setup)."""
import os, sys, time, math, random, logging
from datetime import timedelta
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

VOCAB = 96


class TinyLM(nn.Module):
    def __init__(self, vocab=VOCAB, d=48, layers=2, heads=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, 64, d))
        enc = nn.TransformerEncoderLayer(d, heads, dim_feedforward=2 * d, batch_first=True, dropout=0.0)
        self.blocks = nn.TransformerEncoder(enc, layers, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)

    def forward(self, idx):
        x = self.emb(idx) + self.pos[:, : idx.shape[1]]
        x = self.blocks(x)
        return self.head(self.norm(x))


class MLP(nn.Module):
    def __init__(self, d_in=32, hidden=64, n_cls=10):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_cls)

    def forward(self, x):
        x = F.gelu(self.fc1(x))
        x = F.gelu(self.fc2(x)) + x[..., : self.fc2.out_features] if x.shape[-1] >= self.fc2.out_features else F.gelu(self.fc2(x))
        return self.out(x)


def token_batch(step, bs=8, seq=32, rank=0):
    g = torch.Generator().manual_seed(1000 * rank + step)
    x = torch.randint(0, VOCAB, (bs, seq + 1), generator=g)
    return x[:, :-1], x[:, 1:]


def feat_batch(step, bs=16, d=32, rank=0, n_cls=10):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(bs, d, generator=g), torch.randint(0, n_cls, (bs,), generator=g)


def init_dist(timeout_s=60):
    """Initialise gloo if launched by torchrun (env://); return (rank, world)."""
    if "RANK" in os.environ and "WORLD_SIZE" in os.environ:
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout_s))
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def setup_logging(rank, stamp=True):
    fmt = "%(asctime)s [rank%(rank)s] %(levelname)s %(name)s: %(message)s" if stamp else "[rank%(rank)s] %(message)s"
    old = logging.getLogRecordFactory()

    def factory(*a, **k):
        r = old(*a, **k)
        r.rank = rank
        return r

    logging.setLogRecordFactory(factory)
    logging.basicConfig(level=logging.INFO, format=fmt, stream=sys.stdout, force=False)
    return logging.getLogger("train")


def avg_loss(loss, world):
    t = loss.detach().clone()
    if world > 1:
        dist.all_reduce(t)
        t /= world
    return t.item()
