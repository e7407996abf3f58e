"""Attention-mask / rotary / attention-layout bugs in a tiny decoder LM trained with DDP (gloo, CPU).

--fault none         healthy
--fault mask-shape   causal+padding mask cached for cfg.batch_size; a rank whose shard ends in a partial batch breaks
--fault mask-dtype   tokenizer attention_mask (int64) handed straight to SDPA as attn_mask
--fault rope-odd     n_embd / n_head gives an odd head_dim for the rotary embedding
--fault view         attention output merged with .view() after transpose
--fault pad-nan      hand-written attention + left padding: fully-masked rows -> softmax NaN (rank with short docs)
"""
import argparse
import logging
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, os.path.dirname(__file__))
from common import CORPUS, CharTokenizer, init_dist, seed_all, TinyLM, SelfAttention, rotate_half  # noqa

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--fault-rank", type=int, default=1)
p.add_argument("--fault-step", type=int, default=3)
p.add_argument("--steps", type=int, default=8)
p.add_argument("--batch-size", type=int, default=4)
p.add_argument("--seq-len", type=int, default=32)
p.add_argument("--n-embd", type=int, default=64)
p.add_argument("--n-head", type=int, default=4)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--detect-anomaly", action="store_true")
p.add_argument("--n-docs", type=int, default=23)
args = p.parse_args()

rank, world = init_dist(timeout=int(os.environ.get("PG_TIMEOUT", "30")))
seed_all(1234)

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

tok = CharTokenizer(CORPUS)
ids = tok.encode(CORPUS)


class HandAttention(SelfAttention):
    """Eager attention with explicit masked_fill (used for padding-aware training)."""

    def forward(self, x, attn_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.h, self.hd).transpose(1, 2)
        k = k.view(B, T, self.h, self.hd).transpose(1, 2)
        v = v.view(B, T, self.h, self.hd).transpose(1, 2)
        cos, sin = self.rope(T)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = (q @ k.transpose(-2, -1)) / (self.hd ** 0.5)
        att = att.masked_fill(~attn_mask, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class ViewAttention(SelfAttention):
    def forward(self, x, attn_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.h, self.hd).transpose(1, 2)
        k = k.view(B, T, self.h, self.hd).transpose(1, 2)
        v = v.view(B, T, self.h, self.hd).transpose(1, 2)
        cos, sin = self.rope(T)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        att = (q @ k.transpose(-2, -1)) * (self.hd ** -0.5)
        causal = torch.ones(T, T, dtype=torch.bool).tril()
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        y = att @ v
        y = y.transpose(1, 2).view(B, T, C)  # merge heads
        return self.proj(y)


model = TinyLM(tok.vocab_size, d=args.n_embd, h=args.n_head, n_layer=2)
if args.fault == "pad-nan":
    for b in model.blocks:
        old = b.attn
        b.attn = HandAttention(args.n_embd, args.n_head)
        b.attn.load_state_dict(old.state_dict())
if args.fault == "view":
    for b in model.blocks:
        old = b.attn
        b.attn = ViewAttention(args.n_embd, args.n_head)
        b.attn.load_state_dict(old.state_dict())

n_params = sum(p.numel() for p in model.parameters())
log(f"model params={n_params} n_embd={args.n_embd} n_head={args.n_head} head_dim={args.n_embd // args.n_head} vocab={tok.vocab_size}")
if world > 1:
    model = DDP(model)
opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
if args.detect_anomaly:
    torch.autograd.set_detect_anomaly(True)
    log("autograd anomaly detection enabled")

# ---------------------------------------------------------------- data
T = args.seq_len
if args.fault == "pad-nan":
    # variable-length documents, left padded; some shards contain short document tails
    docs = [ids[i:i + T + 1] for i in range(0, len(ids) - T - 1, T)][: args.steps * args.batch_size * world]
    shard = docs[rank::world]
    if rank == args.fault_rank:
        j = args.fault_step * args.batch_size + 1
        shard[j] = shard[j][: 9]  # a document tail (short)
    batches = []
    for i in range(0, len(shard), args.batch_size):
        b = shard[i:i + args.batch_size]
        L = max(len(s) for s in b)
        x = torch.full((len(b), L), tok.pad_id)
        am = torch.zeros((len(b), L), dtype=torch.long)
        for r, s in enumerate(b):
            x[r, L - len(s):] = torch.tensor(s)
            am[r, L - len(s):] = 1
        batches.append((x, am))
elif args.fault == "mask-shape":
    docs = [ids[i:i + T + 1] for i in range(0, len(ids) - T - 1, T)][: args.n_docs]
    shard = docs[rank::world]
    batches = []
    for i in range(0, len(shard), args.batch_size):  # keep the remainder, every sample counts
        b = torch.tensor(shard[i:i + args.batch_size])
        batches.append((b, torch.ones_like(b)))
else:
    docs = [ids[i:i + T + 1] for i in range(0, len(ids) - T - 1, T)][: args.steps * args.batch_size * world]
    shard = docs[rank::world]
    batches = []
    for i in range(0, len(shard) - args.batch_size + 1, args.batch_size):
        b = torch.tensor(shard[i:i + args.batch_size])
        batches.append((b, torch.ones_like(b)))

log(f"{len(batches)} batches on this rank (batch_size={args.batch_size}, seq_len={T})")

causal_cache = torch.tril(torch.ones(T, T, dtype=torch.bool))[None, None].expand(args.batch_size, 1, T, T)

it = batches
if args.logfmt == "tqdm" and rank == 0:
    from tqdm import tqdm
    it = tqdm(batches, desc="train", file=sys.stdout, mininterval=0)

t0 = time.time()
for step, (x, am) in enumerate(it):
    inp, tgt = x[:, :-1], x[:, 1:].clone()
    am_in = am[:, :-1]
    Tb = inp.shape[1]
    if args.fault == "pad-nan":
        tgt[am[:, 1:] == 0] = -100
        causal = torch.tril(torch.ones(Tb, Tb, dtype=torch.bool))
        mask = causal[None, None] & am_in.bool()[:, None, None, :]
        logits = model(inp, mask)
    elif args.fault == "mask-shape":
        pad = am_in.bool()[:, None, None, :]
        mask = causal_cache[:, :, :Tb, :Tb] & pad
        logits = model(inp, mask)
    elif args.fault == "mask-dtype":
        logits = model(inp, am_in[:, None, None, :])
    else:
        logits = model(inp)
    loss = F.cross_entropy(logits.reshape(-1, logits.size(-1)), tgt.reshape(-1), ignore_index=-100)
    opt.zero_grad(set_to_none=True)
    loss.backward()
    gn = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    msg = f"step {step} loss {loss.item():.4f} grad_norm {gn.item():.3f} lr 3.0e-03 tok/s {inp.numel() / max(time.time() - t0, 1e-6):.0f}"
    if args.logfmt == "tqdm" and rank == 0:
        it.set_postfix(loss=f"{loss.item():.4f}")
        if step % 2 == 0:
            it.write(msg)
    else:
        log(msg)
    t0 = time.time()

if world > 1:
    dist.barrier()
log("training finished")
if world > 1:
    dist.destroy_process_group()
