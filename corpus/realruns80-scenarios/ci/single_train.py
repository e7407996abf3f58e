#!/usr/bin/env python
"""Single-process tiny GPT-2 fine-tuning on a memory-mapped token file, with a tqdm bar.

Scenario family "single_train" (plain `python`, no launcher). No fault flags: the runs are either
healthy (with the usual warnings) or stopped from outside (Ctrl-C) - see cases.jsonl.
"""
import argparse
import os
import time
import warnings

import numpy as np
import torch
from tqdm import tqdm
from transformers import GPT2Config, GPT2LMHeadModel

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=400)
p.add_argument("--batch", type=int, default=8)
p.add_argument("--seq", type=int, default=48)
p.add_argument("--tokens", default="/work/rr80/ci/data/single/tokens.npy")
p.add_argument("--eval-every", type=int, default=100)
p.add_argument("--pid-file", default="")
args = p.parse_args()
if args.pid_file:
    open(args.pid_file + ".0", "w").write(str(os.getpid()))

torch.manual_seed(0)
torch.set_num_threads(1)
if not os.path.exists(args.tokens):
    os.makedirs(os.path.dirname(args.tokens), exist_ok=True)
    np.save(args.tokens, np.random.default_rng(0).integers(0, 1000, size=400_000, dtype=np.int64))
tokens = np.load(args.tokens, mmap_mode="r")
print(f"loaded {len(tokens):,} tokens from {args.tokens}", flush=True)

cfg = GPT2Config(vocab_size=1000, n_positions=64, n_embd=64, n_layer=2, n_head=4)
model = GPT2LMHeadModel(cfg)
model.gradient_checkpointing_enable()
model.train()
opt = torch.optim.AdamW(model.parameters(), lr=5e-4)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 50))
print(f"params: {sum(p.numel() for p in model.parameters()) / 1e6:.2f}M", flush=True)

rng = np.random.default_rng(1)
bar = tqdm(range(args.steps), desc="finetune", ncols=110, mininterval=0.2)
for step in bar:
    starts = rng.integers(0, len(tokens) - args.seq - 1, size=args.batch)
    x = torch.stack([torch.from_numpy(tokens[s:s + args.seq + 1]) for s in starts])
    out = model(input_ids=x[:, :-1], labels=x[:, 1:])
    out.loss.backward()
    gn = torch.nn.utils.clip_grad_norm(model.parameters(), 1.0)
    opt.step()
    opt.zero_grad()
    sched.step()
    bar.set_postfix(loss=f"{out.loss.item():.3f}", gn=f"{gn:.2f}")
    if step % args.eval_every == 0 and step > 0:
        model.eval()
        with torch.no_grad():
            ev = model(input_ids=x[:, :-1], labels=x[:, 1:]).loss.item()
        model.train()
        tqdm.write(f"step {step}: eval loss {ev:.4f} ppl {np.exp(ev):.1f} lr {sched.get_last_lr()[0]:.2e}")
bar.close()
os.makedirs("/work/rr80/ci/out/single", exist_ok=True)
model.save_pretrained("/work/rr80/ci/out/single/final")
print("saved /work/rr80/ci/out/single/final", flush=True)
