"""Shared bits for the tiny-transformer scenarios (gloo / CPU only)."""
import os
import math
import random
from datetime import timedelta

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.distributed as dist

CORPUS = (
    "the quick brown fox jumps over the lazy dog. "
    "a stitch in time saves nine. all that glitters is not gold. "
    "when in rome do as the romans do. actions speak louder than words. "
    "better late than never. every cloud has a silver lining. "
) * 40


def init_dist(timeout=30):
    if "RANK" in os.environ and not dist.is_initialized():
        dist.init_process_group("gloo", timeout=timedelta(seconds=timeout))
    if dist.is_initialized():
        return dist.get_rank(), dist.get_world_size()
    return 0, 1


def seed_all(seed):
    random.seed(seed)
    torch.manual_seed(seed)


class CharTokenizer:
    def __init__(self, text, pad="_"):
        chars = sorted(set(text) | {pad})
        self.stoi = {c: i for i, c in enumerate(chars)}
        self.itos = chars
        self.pad_id = self.stoi[pad]

    @property
    def vocab_size(self):
        return len(self.itos)

    def encode(self, s):
        return [self.stoi[c] for c in s]


def make_batches(ids, batch_size, seq_len, rank, world, n_batches=None, drop_last=True):
    """Contiguous chunks, sharded rank::world (like a naive hand-written sharder)."""
    chunks = [ids[i:i + seq_len + 1] for i in range(0, len(ids) - seq_len - 1, seq_len)]
    chunks = chunks[rank::world]
    out = []
    for i in range(0, len(chunks), batch_size):
        b = chunks[i:i + batch_size]
        if len(b) < batch_size and drop_last:
            break
        t = torch.tensor(b)
        out.append((t[:, :-1], t[:, 1:]))
    if n_batches:
        out = out[:n_batches]
    return out


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class Rotary(nn.Module):
    def __init__(self, head_dim, base=10000.0):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, T):
        t = torch.arange(T, dtype=self.inv_freq.dtype)
        freqs = torch.outer(t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[None, None], emb.sin()[None, None]


class SelfAttention(nn.Module):
    def __init__(self, d, h, rope=True):
        super().__init__()
        self.h = h
        self.hd = d // h
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.rope = Rotary(self.hd) if rope else None

    def forward(self, x, attn_mask=None):
        B, T, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=-1)
        q = q.view(B, T, self.h, self.hd).transpose(1, 2)
        k = k.view(B, T, self.h, self.hd).transpose(1, 2)
        v = v.view(B, T, self.h, self.hd).transpose(1, 2)
        if self.rope is not None:
            cos, sin = self.rope(T)
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        if attn_mask is None:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class MLP(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.fc = nn.Linear(d, 4 * d)
        self.out = nn.Linear(4 * d, d)

    def forward(self, x):
        return self.out(F.gelu(self.fc(x)))


class Block(nn.Module):
    def __init__(self, d, h, mlp=None, rope=True):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = SelfAttention(d, h, rope=rope)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = mlp if mlp is not None else MLP(d)

    def forward(self, x, attn_mask=None):
        x = x + self.attn(self.ln1(x), attn_mask)
        x = x + self.mlp(self.ln2(x))
        return x


class TinyLM(nn.Module):
    def __init__(self, vocab, d=64, h=4, n_layer=2, tie=True, mlp_factory=None, rope=True):
        super().__init__()
        self.tok_emb = nn.Embedding(vocab, d)
        self.blocks = nn.ModuleList(
            [Block(d, h, mlp_factory() if mlp_factory else None, rope=rope) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        nn.init.normal_(self.tok_emb.weight, std=0.02)
        if tie:
            self.lm_head.weight = self.tok_emb.weight

    def forward(self, idx, attn_mask=None):
        x = self.tok_emb(idx)
        for b in self.blocks:
            x = b(x, attn_mask)
        return self.lm_head(self.ln_f(x))
