"""Tiny model trained with torch.compile (inductor CPU backend), optionally under DDP (gloo).

--fault:
  none            healthy
  curriculum      progressive layer unfreezing: forward loops range(self.n_active), n_active grows each step
                  (recompiles; with --strict-recompile the run is configured to fail on the limit)
  item-branch     fullgraph=True and the forward branches on a tensor value (.item())
  varlen          healthy but sequence length changes every step (dynamic-shape recompiles, graph breaks)
"""
import argparse
import datetime
import logging
import os
import sys
import time
import warnings

import torch
import torch.distributed as dist
import torch.nn as nn

p = argparse.ArgumentParser()
p.add_argument("--fault", default="none")
p.add_argument("--steps", type=int, default=6)
p.add_argument("--fullgraph", action="store_true")
p.add_argument("--strict-recompile", action="store_true")
p.add_argument("--recompile-limit", type=int, default=8)
p.add_argument("--logfmt", default="print", choices=["print", "logging", "tqdm"])
p.add_argument("--ddp", action="store_true")
p.add_argument("--fault-rank", type=int, default=-1, help="-1 = all ranks")
p.add_argument("--d", type=int, default=32)
args = p.parse_args()

distributed = "RANK" in os.environ
if distributed:
    dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=40))
    rank, world = dist.get_rank(), dist.get_world_size()
else:
    rank, world = 0, 1

if args.logfmt == "logging":
    logging.basicConfig(level=logging.INFO,
                        format=f"%(asctime)s [rank{rank}] %(levelname)s %(name)s: %(message)s")
    log = logging.getLogger("train").info
else:
    def log(msg):
        print(f"[rank{rank}] {msg}", flush=True)

torch._dynamo.config.recompile_limit = args.recompile_limit
if args.strict_recompile:
    torch._dynamo.config.fail_on_recompile_limit_hit = True

active_fault = args.fault if args.fault_rank in (-1, rank) else "none"


class Block(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.ln = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x))))


class Net(nn.Module):
    def __init__(self, d=32, n_layers=4):
        super().__init__()
        self.emb = nn.Embedding(100, d)
        self.blocks = nn.ModuleList([Block(d) for _ in range(n_layers)])
        self.head = nn.Linear(d, 100)
        self.n_active = n_layers
        self.clip_logits = True

    def forward(self, tok):
        h = self.emb(tok)
        for i in range(self.n_active):
            h = self.blocks[i](h)
        logits = self.head(h)
        if active_fault == "item-branch":
            # skip the soft-cap when logits are already small (saves a few flops)
            if logits.abs().max().item() > 5.0:
                logits = 5.0 * torch.tanh(logits / 5.0)
        return logits


torch.manual_seed(0)
model = Net(d=args.d)
if active_fault == "curriculum":
    model.n_active = 1
if distributed and args.ddp:
    model = nn.parallel.DistributedDataParallel(model)
cmodel = torch.compile(model, fullgraph=args.fullgraph)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
g = torch.Generator().manual_seed(rank)

it = range(args.steps)
if args.logfmt == "tqdm":
    from tqdm import tqdm
    it = tqdm(it, desc=f"rank{rank} train", file=sys.stdout, mininterval=0)

t0 = time.time()
for step in it:
    seqlen = 16
    if args.fault == "varlen":
        seqlen = 8 + 3 * step
    tok = torch.randint(0, 100, (4, seqlen), generator=g)
    if active_fault == "curriculum":
        inner = model.module if hasattr(model, "module") else model
        inner.n_active = min(1 + step, len(inner.blocks))
    t1 = time.time()
    logits = cmodel(tok)
    loss = nn.functional.cross_entropy(logits[:, :-1].reshape(-1, 100), tok[:, 1:].reshape(-1))
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    msg = f"step {step} loss {loss.item():.4f} step_time {time.time() - t1:.2f}s"
    if args.logfmt == "tqdm":
        it.set_postfix(loss=f"{loss.item():.3f}")
        it.write(f"[rank{rank}] {msg}")
    else:
        log(msg)

if distributed:
    dist.barrier()
    dist.destroy_process_group()
log(f"done in {time.time() - t0:.1f}s")
