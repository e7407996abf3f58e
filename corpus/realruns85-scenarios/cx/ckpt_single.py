"""Single-process toy sequence model with activation checkpointing; flags switch
on the training-loop variants that reproduce autograd bugs."""
import argparse
import logging
import random
import sys
import time
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--step", type=int, default=3)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--ckpt", default="nonreentrant", choices=["off", "reentrant", "nonreentrant"])
p.add_argument("--token-drop", type=float, default=0.0)
p.add_argument("--gp", type=float, default=0.0, help="gradient penalty weight (input-gradient norm)")
p.add_argument("--anomaly", action="store_true")
args = p.parse_args()

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
                    stream=sys.stdout)
log = logging.getLogger("train")


class TokenDropBlock(nn.Module):
    """Transformer-ish block that randomly drops tokens during training (speed trick)."""

    def __init__(self, d, drop):
        super().__init__()
        self.attn = nn.MultiheadAttention(d, 4, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.drop = drop

    def forward(self, x):
        if self.training and self.drop > 0:
            keep = [i for i in range(x.shape[1]) if random.random() > self.drop]
            x = x[:, keep]
        h = self.n1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.n2(x))


class Model(nn.Module):
    def __init__(self, vocab=50, d=32, L=2, drop=0.0, ckpt="off"):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList([TokenDropBlock(d, drop) for _ in range(L)])
        self.out = nn.Linear(d, 3)
        self.ckpt = ckpt

    def forward(self, ids, emb=None):
        x = self.emb(ids) if emb is None else emb
        for b in self.blocks:
            if self.ckpt == "off":
                x = b(x)
            else:
                x = checkpoint(b, x, use_reentrant=(self.ckpt == "reentrant"))
        return self.out(x.mean(1))


def main():
    torch.manual_seed(0)
    random.seed(0)
    if args.anomaly:
        torch.autograd.set_detect_anomaly(True)
    m = Model(drop=args.token_drop, ckpt=args.ckpt)
    opt = torch.optim.Adam(m.parameters(), lr=1e-3)
    ids = torch.randint(0, 50, (80, 24))
    ys = ids[:, 0] % 3
    cache = None
    if args.fault == "inference_cache":
        # precompute embeddings once under inference_mode to save time; reuse them every epoch
        with torch.inference_mode():
            cache = m.emb(ids)
        log.info("cached %s embeddings", tuple(cache.shape))
    for step in range(args.steps):
        t0 = time.time()
        sl = slice((step * 8) % 80, (step * 8) % 80 + 8)
        x, y = ids[sl], ys[sl]
        if cache is not None:
            logits = m(x, emb=cache[sl])
        elif args.gp > 0:
            e = m.emb(x).detach().requires_grad_(True)
            logits = m(x, emb=e)
        else:
            logits = m(x)
        if args.fault == "nonscalar" and step == args.step:
            # switched to per-sample loss for hard-example mining, forgot to reduce
            loss = F.cross_entropy(logits, y, reduction="none")
            w = (loss > loss.median()).float() + 0.5
            loss = loss * w
        elif args.fault == "sqrt_norm":
            # feature-norm regulariser; zero feature rows appear after ReLU-dead units
            feats = F.relu(logits - 10.0)
            loss = F.cross_entropy(logits, y) + 0.01 * feats.pow(2).sum(-1).sqrt().mean()
        else:
            loss = F.cross_entropy(logits, y)
        if args.gp > 0:
            g, = torch.autograd.grad(loss, e, create_graph=True)
            loss = loss + args.gp * g.pow(2).sum(-1).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        log.info("step %d loss %.4f (%.0f ms)", step, loss.detach().sum().item(), (time.time() - t0) * 1e3)
    log.info("done")


if __name__ == "__main__":
    main()
