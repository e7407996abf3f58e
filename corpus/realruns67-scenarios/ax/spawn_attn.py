"""Tiny attention model trained with torch.multiprocessing.spawn (gloo, CPU).

--fault none | heads (n_embd not divisible by n_head: reshape fails on every rank)
       | seqlen (rank --fail-rank gets a longer sequence than the positional table)
"""
import argparse
import os
import time
import traceback
from datetime import timedelta

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP


class Attn(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.qkv = nn.Linear(n_embd, 3 * n_embd)
        self.proj = nn.Linear(n_embd, n_embd)

    def split_heads(self, t):
        B, T, C = t.shape
        return t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = map(self.split_heads, (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(x.shape))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln = nn.LayerNorm(n_embd)
        self.attn = Attn(n_embd, n_head)

    def forward(self, x):
        return x + self.attn(self.ln(x))


class TinyLM(nn.Module):
    def __init__(self, vocab=64, n_embd=48, n_head=4, block=32, n_layer=2):
        super().__init__()
        self.tok = nn.Embedding(vocab, n_embd)
        self.pos = nn.Embedding(block, n_embd)
        self.blocks = nn.ModuleList(Block(n_embd, n_head) for _ in range(n_layer))
        self.head = nn.Linear(n_embd, vocab)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        for b in self.blocks:
            x = b(x)
        return self.head(x)


def worker(rank, world, args):
    try:
        train(rank, world, args)
    except Exception:
        traceback.print_exc()  # make sure every rank's error reaches the console
        raise


def train(rank, world, args):
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(args.port)
    dist.init_process_group("gloo", rank=rank, world_size=world, timeout=timedelta(seconds=20))
    torch.manual_seed(0)
    n_head = 5 if args.fault == "heads" else 4
    model = DDP(TinyLM(n_embd=48, n_head=n_head))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(rank)
    for step in range(args.steps):
        T = 32
        if args.fault == "seqlen" and rank == args.fail_rank and step == args.fail_step:
            T = 40  # packed sample longer than block_size
        idx = torch.randint(0, 64, (4, T + 1), generator=g)
        dist.barrier()
        logits = model(idx[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 64), idx[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(f"[rank {rank}] step {step} loss {loss.item():.4f}", flush=True)
        time.sleep(0.1)
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--fault", default="none")
    p.add_argument("--fail-rank", type=int, default=1)
    p.add_argument("--fail-step", type=int, default=2)
    p.add_argument("--steps", type=int, default=6)
    p.add_argument("--world", type=int, default=2)
    p.add_argument("--port", type=int, default=31380)
    a = p.parse_args()
    mp.spawn(worker, args=(a.world, a), nprocs=a.world, join=True)
