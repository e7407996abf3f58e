"""Single-process training jobs that hit per-process resource limits (address space, open files, file size).
--job embed   : builds a token-embedding table sized from the vocab (torch allocator)
--job numpy   : precomputes a numpy feature matrix for the whole corpus
--job tokens  : std::vector growth inside torch (torch.cat of a large list / tensor from huge python list)
"""
import argparse, os, sys, time, logging
import numpy as np
import torch, torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--job", default="embed")
p.add_argument("--vocab", type=int, default=50257)
p.add_argument("--dim", type=int, default=64)
p.add_argument("--corpus-rows", type=int, default=2000)
p.add_argument("--feat", type=int, default=256)
p.add_argument("--steps", type=int, default=30)
args = p.parse_args()
logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
log = logging.getLogger("prep")
torch.manual_seed(0)

if args.job == "numpy":
    log.info("precomputing %d x %d float64 feature matrix", args.corpus_rows, args.feat)
    feats = np.random.default_rng(0).standard_normal((args.corpus_rows, args.feat))
    X = torch.from_numpy(feats).float()
else:
    X = torch.randn(2000, args.dim)

log.info("building model: vocab=%d dim=%d", args.vocab, args.dim)
emb = nn.Embedding(args.vocab, args.dim)
head = nn.Linear(args.dim, args.vocab, bias=False)
model = nn.ModuleDict(dict(emb=emb, head=head))
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
log.info("parameters: %.1fM", sum(p.numel() for p in model.parameters()) / 1e6)
for step in range(args.steps):
    ids = torch.randint(0, args.vocab, (8, 32))
    h = emb(ids)
    logits = head(h)
    loss = nn.functional.cross_entropy(logits.view(-1, args.vocab), ids.view(-1))
    opt.zero_grad(); loss.backward(); opt.step()
    if step % 5 == 0:
        log.info("step %d loss %.4f", step, loss.item())
log.info("done")
